/**
 * Runs the executor process: config, catalog, logger, metrics, the deployment pool and its health
 * reports on NATS, listen, and on SIGTERM/SIGINT a graceful shutdown: NOT_SERVING and a last
 * "draining" health report, no new calls (GOAWAY: clients move to other replicas), in-flight
 * streams get EXECUTOR_SHUTDOWN_GRACE_MS to finish, then the upstream pools, NATS and the metrics
 * server close.
 */
import { loadCatalog } from '@gateway/catalog';
import { createLogger } from '@gateway/logger';
import { connectNats } from '@gateway/messaging';
import { createRegistry, startMetricsServer } from '@gateway/observability';
import { createDeploymentPool, createServer } from './app.js';
import { loadExecutorConfig } from './config.js';
import { HealthPublisher, newReplicaId } from './health-publisher.js';
import { UpstreamPools } from './providers/openai-compatible/upstream-pools.js';

const config = loadExecutorConfig(process.env);
const logger = createLogger('executor', config.LOG_LEVEL);
const catalog = loadCatalog(config.CATALOG_PATH);
const registry = createRegistry('executor');
const pools = new UpstreamPools({
  connectMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
  firstByteMs: config.UPSTREAM_FIRST_BYTE_TIMEOUT_MS,
  idleMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
}, config.UPSTREAM_MAX_CONNECTIONS);
const deployments = createDeploymentPool(catalog, process.env, {
  consecutiveFailures: config.EXECUTOR_BREAKER_CONSECUTIVE_FAILURES,
  errorRate: config.EXECUTOR_BREAKER_ERROR_RATE,
  window: config.EXECUTOR_BREAKER_WINDOW,
  minimumCalls: config.EXECUTOR_BREAKER_MINIMUM_CALLS,
  openMs: config.EXECUTOR_BREAKER_OPEN_MS,
  maxOpenMs: config.EXECUTOR_BREAKER_MAX_OPEN_MS,
  probes: 1,
});
// Not awaited: the executor serves while NATS is unreachable; reports start once it connects.
const nats = connectNats(config.NATS_URL, 'executor', logger);
nats.catch(() => undefined);
const replicaId = newReplicaId();
const health = new HealthPublisher(nats, deployments, logger, { replicaId, intervalMs: config.EXECUTOR_HEALTH_INTERVAL_MS, ttlMs: 3 * config.EXECUTOR_HEALTH_INTERVAL_MS, subject: config.DEPLOYMENT_HEALTH_SUBJECT });
health.start();
let shuttingDown = false;
const server = createServer({
  catalog,
  environment: process.env,
  logger,
  registry,
  pools,
  deployments,
  retry: { maxAttempts: config.EXECUTOR_RETRY_MAX_ATTEMPTS, baseDelayMs: config.EXECUTOR_RETRY_BASE_DELAY_MS, maxDelayMs: config.EXECUTOR_RETRY_MAX_DELAY_MS },
});
const metrics = await startMetricsServer(registry, config.EXECUTOR_METRICS_PORT, '0.0.0.0', () => !shuttingDown);
const port = await server.listen(config.EXECUTOR_LISTEN_ADDR);
logger.info({ address: config.EXECUTOR_LISTEN_ADDR, port, metrics_port: metrics.port, catalog: config.CATALOG_PATH, replica_id: replicaId }, 'executor listening');

async function shutdown(signal: string): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  logger.info({ signal, grace_ms: config.EXECUTOR_SHUTDOWN_GRACE_MS }, 'executor shutting down');
  health.stop();
  await server.shutdown(config.EXECUTOR_SHUTDOWN_GRACE_MS);
  deployments.dispose();
  await pools.close();
  await Promise.race([
    nats.then((connection) => connection.drain()).catch(() => undefined),
    new Promise((resolve) => setTimeout(resolve, 1_000).unref()),
  ]);
  await metrics.close();
  logger.info('executor stopped');
  process.exit(0);
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    shutdown(signal).catch((error: unknown) => {
      logger.error({ err: error }, 'executor shutdown failed');
      process.exit(1);
    });
  });
}
