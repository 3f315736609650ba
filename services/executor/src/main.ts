import { enabledModels, parseCatalog } from '@gateway/catalog';
import { connectNats, drainNats } from '@gateway/messaging';
import { runService, startTracing } from '@gateway/observability';
import { warmUpTokenizer } from '@gateway/tokens';
import { createDeploymentPool, createServer } from './app.js';
import { loadExecutorConfig } from './config.js';
import { HealthPublisher, newReplicaId } from './health-publisher.js';
import { UpstreamPools } from './providers/upstream-pools.js';

/**
 * The executor: the catalog (reloaded when its file changes: new and changed models are served at
 * once, calls in flight finish where they are), the upstream pools, the deployment pool and its
 * health reports on NATS, and the gRPC server. On SIGTERM: NOT_SERVING, serving on for
 * EXECUTOR_SHUTDOWN_DELAY_MS, a last "draining" report, GOAWAY, EXECUTOR_SHUTDOWN_GRACE_MS for the
 * streams in flight, then the pools, NATS and the metrics server close.
 */
await runService({
  name: 'executor',
  config: loadExecutorConfig,
  shutdown: (config) => ({ graceMs: config.EXECUTOR_SHUTDOWN_GRACE_MS, delayMs: config.EXECUTOR_SHUTDOWN_DELAY_MS }),
  async open({ config, logger, registry, open, metrics, reloadableFile }) {
    // The metrics server is the last to close.
    const metricsServer = open(await metrics(config.EXECUTOR_METRICS_PORT), (server) => server.close());
    const tracing = open(startTracing('executor'), (opened) => opened.shutdown());
    const catalogFile = reloadableFile({ path: config.CATALOG_PATH, name: 'catalog', parse: parseCatalog });
    const catalog = catalogFile.current;
    const timeouts = {
      connectMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
      firstByteMs: config.UPSTREAM_FIRST_BYTE_TIMEOUT_MS,
      idleMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
    };
    const pools = open(new UpstreamPools(timeouts, config.UPSTREAM_MAX_CONNECTIONS), (opened) => opened.close());
    const breaker = {
      consecutiveFailures: config.EXECUTOR_BREAKER_CONSECUTIVE_FAILURES,
      errorRate: config.EXECUTOR_BREAKER_ERROR_RATE,
      window: config.EXECUTOR_BREAKER_WINDOW,
      minimumCalls: config.EXECUTOR_BREAKER_MINIMUM_CALLS,
      openMs: config.EXECUTOR_BREAKER_OPEN_MS,
      maxOpenMs: config.EXECUTOR_BREAKER_MAX_OPEN_MS,
      probes: 1,
    };
    const deployments = open(createDeploymentPool(catalog, process.env, breaker), (pool) => pool.dispose());
    catalogFile.onChange((next) => deployments.replaceModels(enabledModels(next, process.env)));
    open(catalogFile.start(), (file) => file.close());
    // Not awaited: the executor serves while NATS is unreachable; reports start once it connects.
    const nats = open(connectNats(config.NATS_URL, 'executor', logger, registry), drainNats);
    nats.catch(() => undefined);
    const replicaId = newReplicaId();
    const healthOptions = {
      replicaId,
      intervalMs: config.EXECUTOR_HEALTH_INTERVAL_MS,
      ttlMs: 3 * config.EXECUTOR_HEALTH_INTERVAL_MS,
      subject: config.DEPLOYMENT_HEALTH_SUBJECT,
    };
    const health = new HealthPublisher(nats, deployments, logger, healthOptions);
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
      retry: {
        maxAttempts: config.EXECUTOR_RETRY_MAX_ATTEMPTS,
        baseDelayMs: config.EXECUTOR_RETRY_BASE_DELAY_MS,
        maxDelayMs: config.EXECUTOR_RETRY_MAX_DELAY_MS,
      },
    });
    return {
      // NOT_SERVING at once on the signal (the readiness probe asks grpc.health.v1); the drain after the delay.
      reportNotServing: () => server.reportNotServing(),
      drain: async () => {
        health.stop();
        await server.shutdown(config.EXECUTOR_SHUTDOWN_GRACE_MS);
      },
      beforeListen: warmUpTokenizer,
      listen: () => server.listen(config.EXECUTOR_LISTEN_ADDR),
      listening: (port) => [
        { address: config.EXECUTOR_LISTEN_ADDR, port, metrics_port: metricsServer.port, catalog: config.CATALOG_PATH, replica_id: replicaId },
        'executor listening',
      ],
    };
  },
});
