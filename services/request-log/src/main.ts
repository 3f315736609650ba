import { servedConsumingService } from '@gateway/messaging';
import { runService } from '@gateway/observability';
import { createServer } from './app.js';
import { loadRequestLogConfig } from './config.js';
import { openRequestLogDependencies } from './dependencies.js';

/** The request log: the catalog, PostgreSQL (its schema migrated first), the usage consumers and the gRPC server. */
await runService({
  name: 'request-log',
  config: loadRequestLogConfig,
  shutdown: (config) => ({ graceMs: config.REQUEST_LOG_SHUTDOWN_GRACE_MS }),
  async open(context) {
    const { config } = context;
    const dependencies = await openRequestLogDependencies(context);
    const requestLog = createServer(dependencies);
    // Closed by the drain, after the consumers and NATS.
    const metricsServer = await context.metrics(config.REQUEST_LOG_METRICS_PORT);
    return servedConsumingService(requestLog, dependencies.nc, {
      address: config.REQUEST_LOG_LISTEN_ADDR,
      graceMs: config.REQUEST_LOG_SHUTDOWN_GRACE_MS,
      metrics: metricsServer,
      ready: () => !dependencies.nc.isClosed(),
      listening: (port) => [{ address: config.REQUEST_LOG_LISTEN_ADDR, port, metrics_port: metricsServer.port }, 'request log running'],
    });
  },
});
