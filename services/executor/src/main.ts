/**
 * Runs the executor process: config, catalog (reloaded when its file changes: new and changed
 * models are served at once, calls in flight finish where they are), logger, metrics, the deployment pool and its health
 * reports on NATS, listen, and on SIGTERM/SIGINT a graceful shutdown: NOT_SERVING (and serving on
 * for EXECUTOR_SHUTDOWN_DELAY_MS), a last "draining" health report, no new calls (GOAWAY: clients move to other replicas), in-flight
 * streams get EXECUTOR_SHUTDOWN_GRACE_MS to finish, then the upstream pools, NATS and the metrics
 * server close.
 */
import { enabledModels, parseCatalog } from '@gateway/catalog';
import { connectNats, drainNats } from '@gateway/messaging';
import { startMetricsServer, startTracing, startService } from '@gateway/observability';
import { createDeploymentPool, createServer } from './app.js';
import { loadExecutorConfig } from './config.js';
import { HealthPublisher, newReplicaId } from './health-publisher.js';
import { UpstreamPools } from './providers/upstream-pools.js';
import { warmUpTokenizer } from '@gateway/tokens';

const config = loadExecutorConfig(process.env);
// The shutdown exists before anything it closes: each resource registers its close as it opens
// (the last opened closes first).
const { logger, registry, lifecycle, reloadableFile } = startService('executor', config, {
  graceMs: config.EXECUTOR_SHUTDOWN_GRACE_MS,
  delayMs: config.EXECUTOR_SHUTDOWN_DELAY_MS,
});
// Ready once the gRPC server listens, until shutdown; the metrics server is the last to close.
let listening = false;
const metrics = await startMetricsServer(registry, config.EXECUTOR_METRICS_PORT, '0.0.0.0', () => listening && !lifecycle.shuttingDown);
lifecycle.onStop(() => metrics.close());
const tracing = startTracing('executor');
lifecycle.onStop(() => tracing.shutdown());
const catalogFile = reloadableFile({ path: config.CATALOG_PATH, name: 'catalog', parse: parseCatalog });
const catalog = catalogFile.current;
const pools = new UpstreamPools(
  {
    connectMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
    firstByteMs: config.UPSTREAM_FIRST_BYTE_TIMEOUT_MS,
    idleMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
  },
  config.UPSTREAM_MAX_CONNECTIONS,
);
lifecycle.onStop(() => pools.close());
const deployments = createDeploymentPool(catalog, process.env, {
  consecutiveFailures: config.EXECUTOR_BREAKER_CONSECUTIVE_FAILURES,
  errorRate: config.EXECUTOR_BREAKER_ERROR_RATE,
  window: config.EXECUTOR_BREAKER_WINDOW,
  minimumCalls: config.EXECUTOR_BREAKER_MINIMUM_CALLS,
  openMs: config.EXECUTOR_BREAKER_OPEN_MS,
  maxOpenMs: config.EXECUTOR_BREAKER_MAX_OPEN_MS,
  probes: 1,
});
lifecycle.onStop(() => deployments.dispose());
catalogFile.onChange((next) => deployments.replaceModels(enabledModels(next, process.env)));
catalogFile.start();
lifecycle.onStop(() => catalogFile.close());
// Not awaited: the executor serves while NATS is unreachable; reports start once it connects.
const nats = connectNats(config.NATS_URL, 'executor', logger, registry);
nats.catch(() => undefined);
lifecycle.onStop(() => drainNats(nats));
const replicaId = newReplicaId();
const health = new HealthPublisher(nats, deployments, logger, {
  replicaId,
  intervalMs: config.EXECUTOR_HEALTH_INTERVAL_MS,
  ttlMs: 3 * config.EXECUTOR_HEALTH_INTERVAL_MS,
  subject: config.DEPLOYMENT_HEALTH_SUBJECT,
});
health.start();
const server = createServer({
  catalog,
  environment: process.env,
  logger,
  registry,
  pools,
  deployments,
  tracing,
  connectionAge: { maxAgeMs: config.GRPC_MAX_CONNECTION_AGE_MS, graceMs: config.GRPC_MAX_CONNECTION_AGE_GRACE_MS },
  retry: { maxAttempts: config.EXECUTOR_RETRY_MAX_ATTEMPTS, baseDelayMs: config.EXECUTOR_RETRY_BASE_DELAY_MS, maxDelayMs: config.EXECUTOR_RETRY_MAX_DELAY_MS },
});
// NOT_SERVING at once on the signal (the readiness probe asks grpc.health.v1); the drain after the delay.
lifecycle.onSignal(() => server.reportNotServing());
lifecycle.onStop(async () => {
  health.stop();
  await server.shutdown(config.EXECUTOR_SHUTDOWN_GRACE_MS);
});
warmUpTokenizer();
const port = await server.listen(config.EXECUTOR_LISTEN_ADDR);
listening = true;
logger.info(
  { address: config.EXECUTOR_LISTEN_ADDR, port, metrics_port: metrics.port, catalog: config.CATALOG_PATH, replica_id: replicaId },
  'executor listening',
);
