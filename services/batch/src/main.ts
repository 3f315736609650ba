import { runService, servedGrpc } from '@gateway/observability';
import { createBatchApp } from './app.js';
import { loadBatchConfig } from './config.js';
import { openBatchDependencies } from './dependencies.js';

/**
 * The batch service: PostgreSQL (its schema migrated first, waited for while it does not answer),
 * the gRPC server and the batch lane; ready while PostgreSQL answers; on SIGTERM NOT_SERVING at
 * once, then no new calls or lines, BATCH_SHUTDOWN_GRACE_MS for the calls and lines in flight, and
 * the lines still running handed back to the queue.
 */
await runService({
  name: 'batch',
  config: loadBatchConfig,
  shutdown: (config) => ({ graceMs: config.BATCH_SHUTDOWN_GRACE_MS }),
  async open(context) {
    const { config } = context;
    const dependencies = openBatchDependencies(context);
    const metricsServer = await context.openMetrics(config.BATCH_METRICS_PORT);
    const app = createBatchApp(dependencies);
    let laneStopped: Promise<void> | undefined;
    return servedGrpc(app.server, {
      address: config.BATCH_LISTEN_ADDR,
      graceMs: config.BATCH_SHUTDOWN_GRACE_MS,
      beforeListen: () => app.start(),
      ready: () => app.ready,
      // The lane's lines and the server's calls share the grace.
      beforeShutdown: () => {
        laneStopped = app.stop(config.BATCH_SHUTDOWN_GRACE_MS);
      },
      afterShutdown: () => laneStopped,
      listening: (port) => [{ address: config.BATCH_LISTEN_ADDR, port, metrics_port: metricsServer.port }, 'batch service listening'],
    });
  },
});
