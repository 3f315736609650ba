import { runService, servedGrpc } from '@gateway/observability';
import { createServer } from './app.js';
import { loadRouterConfig } from './config.js';
import { followDeploymentHealth, openRouterDependencies } from './dependencies.js';

/**
 * The router: its catalog (an invalid one stops the process with its CatalogError; a change of the
 * file later is served at once and pushed to every edge, an invalid change is logged and ignored),
 * the executors' deployment health from NATS, and the gRPC server.
 */
await runService({
  name: 'router',
  config: loadRouterConfig,
  shutdown: (config) => ({ graceMs: config.ROUTER_SHUTDOWN_GRACE_MS }),
  async open(context) {
    const { config } = context;
    const dependencies = openRouterDependencies(context);
    const server = createServer(dependencies);
    const metricsServer = await context.openMetrics(config.ROUTER_METRICS_PORT);
    const health = followDeploymentHealth(context, dependencies);
    return servedGrpc(server, {
      address: config.ROUTER_LISTEN_ADDR,
      graceMs: config.ROUTER_SHUTDOWN_GRACE_MS,
      afterShutdown: () => health.stop(),
      listening: (port) => [
        {
          address: config.ROUTER_LISTEN_ADDR,
          port,
          metrics_port: metricsServer.port,
          catalog: config.CATALOG_PATH,
          models: dependencies.state.enabledModels().map((model) => model.id),
        },
        'router listening',
      ],
    });
  },
});
