import { parseCatalog } from '@gateway/catalog';
import { connectNats, drainNats } from '@gateway/messaging';
import { startMetricsServer, startTracing, startService } from '@gateway/observability';
import { createServer } from './app.js';
import { CatalogState } from './catalog-state.js';
import { loadRouterConfig } from './config.js';
import { DeploymentHealth, subscribeDeploymentHealth } from './deployment-health.js';

/**
 * Runs the router: config, catalog (an invalid one stops the process with its CatalogError; a
 * change of the file later is served at once and pushed to every edge, an invalid change is
 * logged and ignored), metrics, gRPC server, and a graceful shutdown on SIGTERM or SIGINT.
 */
async function main(): Promise<void> {
  const config = loadRouterConfig(process.env);
  // The shutdown exists before anything it closes: each resource registers its close as it opens
  // (the last opened closes first).
  const { logger, registry, lifecycle, reloadableFile } = startService('router', config, { graceMs: config.ROUTER_SHUTDOWN_GRACE_MS });
  const catalogFile = reloadableFile({ path: config.CATALOG_PATH, name: 'catalog', parse: parseCatalog });
  lifecycle.onStop(() => catalogFile.close());
  // The key variables only switch models on; the router never reads or logs their values.
  const state = new CatalogState(catalogFile.current, process.env);
  const tracing = startTracing('router');
  lifecycle.onStop(() => tracing.shutdown());
  const server = createServer({
    state,
    logger,
    registry,
    tracing,
    connectionAge: { maxAgeMs: config.GRPC_MAX_CONNECTION_AGE_MS, graceMs: config.GRPC_MAX_CONNECTION_AGE_GRACE_MS },
  });
  // Ready once the gRPC server listens, until shutdown.
  let listening = false;
  const metricsServer = await startMetricsServer(registry, config.ROUTER_METRICS_PORT, '0.0.0.0', () => listening && !lifecycle.shuttingDown);
  lifecycle.onStop(() => metricsServer.close());
  // Deployment health from the executors; not awaited: the router serves while NATS is unreachable
  // (every model then counts as available).
  const health = new DeploymentHealth(state);
  catalogFile.onChange((catalog) => {
    state.replaceCatalog(catalog);
    // The executors' latest reports may already speak of a model the new catalog adds.
    health.update();
    logger.info({ version: state.version, models: state.enabledModels().map((model) => model.id) }, 'catalog served');
  });
  catalogFile.start();
  const nats = connectNats(config.NATS_URL, 'router', logger, registry);
  lifecycle.onStop(() => drainNats(nats));
  nats.then(
    (connection) => {
      subscribeDeploymentHealth(connection, health, logger, config.DEPLOYMENT_HEALTH_SUBJECT);
    },
    (error: unknown) => logger.error({ err: error }, 'router has no NATS connection'),
  );
  lifecycle.onSignal(() => server.reportNotServing());
  lifecycle.onStop(async () => {
    await server.shutdown(config.ROUTER_SHUTDOWN_GRACE_MS);
    health.stop();
  });
  const port = await server.listen(config.ROUTER_LISTEN_ADDR);
  listening = true;
  logger.info(
    {
      address: config.ROUTER_LISTEN_ADDR,
      port,
      metrics_port: metricsServer.port,
      catalog: config.CATALOG_PATH,
      models: state.enabledModels().map((model) => model.id),
    },
    'router listening',
  );
}

main().catch((error: unknown) => {
  // The logger may not exist yet (bad configuration), so the failure is one JSON line on stderr.
  process.stderr.write(
    `${JSON.stringify({ level: 'fatal', service: 'router', msg: 'router failed to start', error: error instanceof Error ? error.message : String(error) })}\n`,
  );
  process.exit(1);
});
