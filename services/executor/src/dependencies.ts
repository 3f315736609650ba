/**
 * The executor's dependencies, each opened with its close: tracing, the catalog (reloaded when its
 * file changes: new and changed models are served at once, calls in flight finish where they
 * are), the upstream pools, the deployment pool, NATS and the deployment health reports on it.
 */
import { enabledModels, parseCatalog } from '@gateway/catalog';
import { connectionAgeOf } from '@gateway/grpc';
import { connectNats, drainNats } from '@gateway/messaging';
import type { RunContext } from '@gateway/observability';
import { createDeploymentPool, type ExecutorDependencies } from './app.js';
import type { ExecutorConfig } from './config.js';
import { HealthPublisher, newReplicaId } from './health-publisher.js';
import { UpstreamPools } from './providers/upstream-pools.js';

/** The server's dependencies, with the health reports (stopped first in the drain) and this replica's id. */
export interface OpenedExecutorDependencies extends ExecutorDependencies {
  readonly health: HealthPublisher;
  readonly replicaId: string;
}

/** Opens the executor's dependencies; NATS is not awaited (the executor serves while it is unreachable). */
export function openExecutorDependencies({
  config,
  environment,
  logger,
  registry,
  open,
  tracing,
  reloadableFile,
}: RunContext<ExecutorConfig>): OpenedExecutorDependencies {
  const tracer = tracing();
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
  const deployments = open(createDeploymentPool(catalog, environment, breaker), (pool) => pool.dispose());
  catalogFile.onChange((next) => deployments.replaceModels(enabledModels(next, environment)));
  open(catalogFile.start(), (file) => file.close());
  // Reports start once NATS connects.
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
  return {
    catalog,
    environment,
    logger,
    registry,
    pools,
    deployments,
    tracing: tracer,
    connectionAge: connectionAgeOf(config),
    retry: {
      maxAttempts: config.EXECUTOR_RETRY_MAX_ATTEMPTS,
      baseDelayMs: config.EXECUTOR_RETRY_BASE_DELAY_MS,
      maxDelayMs: config.EXECUTOR_RETRY_MAX_DELAY_MS,
    },
    health,
    replicaId,
  };
}
