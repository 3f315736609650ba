import { parseCatalog } from '@gateway/catalog';
import { connectNats, drainNats } from '@gateway/messaging';
import { runService, startTracing } from '@gateway/observability';
import { createServer } from './app.js';
import { CatalogState } from './catalog-state.js';
import { loadRouterConfig } from './config.js';
import { DeploymentHealth, subscribeDeploymentHealth } from './deployment-health.js';

/**
 * The router: its catalog (an invalid one stops the process with its CatalogError; a change of the
 * file later is served at once and pushed to every edge, an invalid change is logged and ignored),
 * the executors' deployment health from NATS, and the gRPC server.
 */
await runService({
  name: 'router',
  config: loadRouterConfig,
  shutdown: (config) => ({ graceMs: config.ROUTER_SHUTDOWN_GRACE_MS }),
  async open({ config, logger, registry, open, metrics, reloadableFile }) {
    const catalogFile = open(reloadableFile({ path: config.CATALOG_PATH, name: 'catalog', parse: parseCatalog }), (file) => file.close());
    // The key variables only switch models on; the router never reads or logs their values.
    const state = new CatalogState(catalogFile.current, process.env);
    const tracing = open(startTracing('router'), (opened) => opened.shutdown());
    const connectionAge = { maxAgeMs: config.GRPC_MAX_CONNECTION_AGE_MS, graceMs: config.GRPC_MAX_CONNECTION_AGE_GRACE_MS };
    const server = createServer({ state, logger, registry, tracing, connectionAge });
    const metricsServer = open(await metrics(config.ROUTER_METRICS_PORT), (opened) => opened.close());
    const health = new DeploymentHealth(state);
    catalogFile.onChange((catalog) => {
      state.replaceCatalog(catalog);
      // The executors' latest reports may already speak of a model the new catalog adds.
      health.update();
      logger.info({ version: state.version, models: state.enabledModels().map((model) => model.id) }, 'catalog served');
    });
    catalogFile.start();
    // Not awaited: the router serves while NATS is unreachable (every model then counts as available).
    const nats = open(connectNats(config.NATS_URL, 'router', logger, registry), drainNats);
    nats.then(
      (connection) => subscribeDeploymentHealth(connection, health, logger, config.DEPLOYMENT_HEALTH_SUBJECT),
      (error: unknown) => logger.error({ err: error }, 'router has no NATS connection'),
    );
    return {
      reportNotServing: () => server.reportNotServing(),
      drain: async () => {
        await server.shutdown(config.ROUTER_SHUTDOWN_GRACE_MS);
        health.stop();
      },
      listen: () => server.listen(config.ROUTER_LISTEN_ADDR),
      listening: (port) => [
        {
          address: config.ROUTER_LISTEN_ADDR,
          port,
          metrics_port: metricsServer.port,
          catalog: config.CATALOG_PATH,
          models: state.enabledModels().map((model) => model.id),
        },
        'router listening',
      ],
    };
  },
});
