/**
 * Wiring of the executor: the catalog's enabled models, the provider adapters and the gRPC
 * service, returned as an unstarted server. Tests import this without a port of their own choosing;
 * main.ts runs it.
 */
import { enabledModels, type Catalog } from '@gateway/catalog';
import { createGatewayServer, type GatewayServer } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { prometheus } from '@gateway/observability';
import { loadGatewayGrpc } from '@gateway/proto';
import { createExecutorMetrics } from './executor-metrics.js';
import { createExecutorHandlers } from './executor-service.js';
import type { UpstreamPools } from './providers/openai-compatible/upstream-pools.js';
import { ProviderRegistry } from './providers/provider-registry.js';

/** The fully qualified name of the service, as grpc.health.v1 reports it. */
export const EXECUTOR_SERVICE_NAME = 'gateway.executor.v1.ExecutorService';

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
}

/** Creates the executor's gRPC server, unstarted. */
export function createServer(dependencies: ExecutorDependencies): GatewayServer {
  const models = enabledModels(dependencies.catalog, dependencies.environment);
  const handlers = createExecutorHandlers({
    models,
    providers: new ProviderRegistry({ pools: dependencies.pools, environment: dependencies.environment }),
    logger: dependencies.logger,
    metrics: createExecutorMetrics(dependencies.registry),
  });
  const definition = loadGatewayGrpc().gateway.executor.v1.ExecutorService.service;
  return createGatewayServer([{ name: EXECUTOR_SERVICE_NAME, definition, handlers }]);
}
