import { runService, servedGrpc } from '@gateway/observability';
import { warmUpTokenizer } from '@gateway/tokens';
import { createServer } from './app.js';
import { loadExecutorConfig } from './config.js';
import { openExecutorDependencies } from './dependencies.js';

/**
 * The executor: the catalog (reloaded when its file changes), the upstream pools, the deployment
 * pool and its health reports on NATS, and the gRPC server. On SIGTERM: NOT_SERVING, serving on for
 * EXECUTOR_SHUTDOWN_DELAY_MS, a last "draining" report, GOAWAY, EXECUTOR_SHUTDOWN_GRACE_MS for the
 * streams in flight, then the pools, NATS and the metrics server close.
 */
await runService({
  name: 'executor',
  config: loadExecutorConfig,
  shutdown: (config) => ({ graceMs: config.EXECUTOR_SHUTDOWN_GRACE_MS, delayMs: config.EXECUTOR_SHUTDOWN_DELAY_MS }),
  async open(context) {
    const { config } = context;
    // The metrics server is the last to close.
    const metricsServer = await context.openMetrics(config.EXECUTOR_METRICS_PORT);
    const dependencies = openExecutorDependencies(context);
    const server = createServer(dependencies);
    return servedGrpc(server, {
      address: config.EXECUTOR_LISTEN_ADDR,
      graceMs: config.EXECUTOR_SHUTDOWN_GRACE_MS,
      beforeShutdown: () => dependencies.health.stop(),
      beforeListen: warmUpTokenizer,
      listening: (port) => [
        { address: config.EXECUTOR_LISTEN_ADDR, port, metrics_port: metricsServer.port, catalog: config.CATALOG_PATH, replica_id: dependencies.replicaId },
        'executor listening',
      ],
    });
  },
});
