/**
 * Wiring of the executor: the catalog's enabled models as a pool of deployments, the provider
 * adapters and the gRPC service, returned as an unstarted server. Tests import this without a port
 * of their own choosing; main.ts runs it.
 */
import { enabledModels, type Catalog } from '@gateway/catalog';
import { connectionAgeOptions, createGatewayServer, type ConnectionAge, type GatewayServer } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { prometheus, Tracing } from '@gateway/observability';
import { loadGatewayGrpc } from '@gateway/proto';
import { createExecutorMetrics } from './executor-metrics.js';
import { createExecutorHandlers } from './executor-service.js';
import type { BreakerOptions } from './pool/deployment-breaker.js';
import { DeploymentPool } from './pool/deployment-pool.js';
import type { RetryOptions } from './pool/run-with-fallbacks.js';
import type { UpstreamPools } from './providers/upstream-pools.js';
import { ProviderRegistry } from './providers/provider-registry.js';

/** The fully qualified name of the service, as grpc.health.v1 reports it. */
export const EXECUTOR_SERVICE_NAME = 'gateway.executor.v1.ExecutorService';

/** The defaults of .env.example, for callers (tests) that do not read the configuration. */
export const DEFAULT_RETRY: RetryOptions = Object.freeze({ maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 2_000 });
/** The defaults of .env.example. */
export const DEFAULT_BREAKER: BreakerOptions = Object.freeze({
  consecutiveFailures: 5,
  errorRate: 0.5,
  window: 20,
  minimumCalls: 10,
  openMs: 5_000,
  maxOpenMs: 60_000,
  probes: 1,
});

/** What the executor's server is built from; the caller owns (and closes) each resource. */
export interface ExecutorDependencies {
  readonly catalog: Catalog;
  /**
   * The process environment: a non-simulated model is on only when the variable its catalog
   * entry names (api_key_env) is set here, and its key is read from that variable.
   */
  readonly environment: Readonly<Record<string, string | undefined>>;
  readonly logger: Logger;
  /** Where the executor's metrics are registered (once per registry). */
  readonly registry: prometheus.Registry;
  /** Keep-alive connection pools to the upstreams. */
  readonly pools: UpstreamPools;
  /** The deployments and their breakers (main.ts shares it with the health publisher); built from the catalog when absent. */
  readonly deployments?: DeploymentPool;
  /** Retry tuning; DEFAULT_RETRY when absent. */
  readonly retry?: RetryOptions;
  /** Traces (OTLP), when configured; off by default. */
  readonly tracing?: Tracing;
  /** The server's connection age and grace (GRPC_MAX_CONNECTION_AGE_MS, ..._GRACE_MS); the defaults of @gateway/grpc when absent. */
  readonly connectionAge?: ConnectionAge;
}

/** The deployment pool of the catalog's enabled models. */
export function createDeploymentPool(
  catalog: Catalog,
  environment: Readonly<Record<string, string | undefined>>,
  breaker: BreakerOptions = DEFAULT_BREAKER,
): DeploymentPool {
  return new DeploymentPool(enabledModels(catalog, environment), environment, breaker);
}

/** Creates the executor's gRPC server, unstarted. */
export function createServer(dependencies: ExecutorDependencies): GatewayServer {
  const pool = dependencies.deployments ?? createDeploymentPool(dependencies.catalog, dependencies.environment);
  const service = createExecutorHandlers({
    pool,
    providers: new ProviderRegistry({ pools: dependencies.pools, environment: dependencies.environment }),
    logger: dependencies.logger,
    metrics: createExecutorMetrics(
      dependencies.registry,
      () => pool.health().map((entry) => ({ model: entry.model_id ?? '', deployment: entry.deployment_id ?? '', state: String(entry.state) })),
      () => pool.inFlight(),
    ),
    retry: dependencies.retry ?? DEFAULT_RETRY,
    tracing: dependencies.tracing,
  });
  const definition = loadGatewayGrpc().gateway.executor.v1.ExecutorService.service;
  return createGatewayServer(
    [{ name: EXECUTOR_SERVICE_NAME, definition, handlers: service.handlers, drain: service.drain }],
    connectionAgeOptions(dependencies.connectionAge),
  );
}
