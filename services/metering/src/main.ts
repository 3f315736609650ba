import { servedConsumingService } from '@gateway/messaging';
import { runService } from '@gateway/observability';
import { createServer } from './app.js';
import { loadMeteringConfig } from './config.js';
import { openMeteringDependencies } from './dependencies.js';

/** Metering: the catalog's prices, Redis (state, and stored responses), the usage consumers and the gRPC server. */
await runService({
  name: 'metering',
  config: loadMeteringConfig,
  shutdown: (config) => ({ graceMs: config.METERING_SHUTDOWN_GRACE_MS }),
  async open(context) {
    const { config } = context;
    const dependencies = await openMeteringDependencies(context);
    const { nc, redis, catalog } = dependencies;
    // Closed by the drain, after the consumers and NATS.
    const metricsServer = await context.metrics(config.METERING_METRICS_PORT);
    return servedConsumingService(createServer(dependencies), nc, {
      address: config.METERING_LISTEN_ADDR,
      graceMs: config.METERING_SHUTDOWN_GRACE_MS,
      metrics: metricsServer,
      ready: () => redis.status === 'ready' && !nc.isClosed(),
      listening: (port) => [
        {
          address: config.METERING_LISTEN_ADDR,
          port,
          metrics_port: metricsServer.port,
          catalog_path: config.CATALOG_PATH,
          models: catalog.current.models.length,
        },
        'metering running',
      ],
    });
  },
});
