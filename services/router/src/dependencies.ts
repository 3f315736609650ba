/**
 * The router's dependencies: its catalog file and the state served from it, tracing, and the
 * executors' deployment health (the catalog's changes applied to both, the health reports read
 * from NATS), each opened with its close.
 */
import { type Catalog, parseCatalog } from '@gateway/catalog';
import type { ReloadableFile } from '@gateway/config';
import { connectionAgeOf } from '@gateway/grpc';
import { connectNats, drainNats } from '@gateway/messaging';
import type { RunContext } from '@gateway/observability';
import type { RouterDependencies } from './app.js';
import { CatalogState } from './catalog-state.js';
import type { RouterConfig } from './config.js';
import { DeploymentHealth, subscribeDeploymentHealth } from './deployment-health.js';

/** The router's server's dependencies, with the catalog file `followDeploymentHealth` starts. */
export type OpenedRouterDependencies = RouterDependencies & { catalogFile: ReloadableFile<Catalog> };

/** Opens the catalog file (an invalid one stops the process with its CatalogError) and tracing. */
export function openRouterDependencies({
  config,
  environment,
  logger,
  registry,
  open,
  tracing,
  reloadableFile,
}: RunContext<RouterConfig>): OpenedRouterDependencies {
  const catalogFile = open(reloadableFile({ path: config.CATALOG_PATH, name: 'catalog', parse: parseCatalog }), (file) => file.close());
  // The key variables only switch models on; the router never reads or logs their values.
  const state = new CatalogState(catalogFile.current, environment);
  return { catalogFile, state, logger, registry, tracing: tracing(), connectionAge: connectionAgeOf(config) };
}

/**
 * Starts following the catalog file (a change is served at once and pushed to every edge, an
 * invalid change is logged and ignored) and the executors' health reports on NATS, which is not
 * awaited: the router serves while NATS is unreachable (every model then counts as available).
 */
export function followDeploymentHealth(
  { config, logger, registry, open }: RunContext<RouterConfig>,
  { catalogFile, state }: OpenedRouterDependencies,
): DeploymentHealth {
  const health = new DeploymentHealth(state);
  catalogFile.onChange((catalog) => {
    state.replaceCatalog(catalog);
    // The executors' latest reports may already speak of a model the new catalog adds.
    health.update();
    logger.info({ version: state.version, models: state.enabledModels().map((model) => model.id) }, 'catalog served');
  });
  catalogFile.start();
  const nats = open(connectNats(config.NATS_URL, 'router', logger, registry), drainNats);
  nats.then(
    (connection) => subscribeDeploymentHealth(connection, health, logger, config.DEPLOYMENT_HEALTH_SUBJECT),
    (error: unknown) => logger.error({ err: error }, 'router has no NATS connection'),
  );
  return health;
}
