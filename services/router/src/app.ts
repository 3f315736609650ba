import { connectionAgeOptions, createGatewayServer, type ConnectionAge, type GatewayServer, withShutdownSteps } from '@gateway/grpc';
import { loadGatewayGrpc } from '@gateway/proto';
import type { Logger } from '@gateway/logger';
import type { prometheus, Tracing } from '@gateway/observability';
import { AutoRouterScorer, loadAutoRouterModel } from './auto-router-model.js';
import type { CatalogState } from './catalog-state.js';
import { createRouterMetrics } from './router-metrics.js';
import { createRouterService } from './router-service.js';

/** What the router's server is wired from; main.ts builds these, tests build their own. */
export interface RouterDependencies {
  state: CatalogState;
  logger: Logger;
  /** Where the router's metrics are registered. */
  registry: prometheus.Registry;
  /** The `auto` scorer; by default the shipped model file, read once here (a bad file fails start-up). */
  scorer?: AutoRouterScorer;
  /** Traces (OTLP), when configured; off by default. */
  tracing?: Tracing;
  /** The server's connection age and grace (GRPC_MAX_CONNECTION_AGE_MS, ..._GRACE_MS); the defaults of @gateway/grpc when absent. */
  connectionAge?: ConnectionAge;
}

/**
 * The router's unstarted gRPC server: RouterService and grpc.health.v1. Its shutdown first ends
 * the open WatchCatalog streams (they never end on their own), then drains unary calls within
 * the grace period.
 */
export function createServer({
  state,
  logger,
  registry,
  scorer = new AutoRouterScorer(loadAutoRouterModel()),
  tracing,
  connectionAge,
}: RouterDependencies): GatewayServer {
  const service = createRouterService({ state, logger, metrics: createRouterMetrics(registry), scorer, tracing });
  const server = createGatewayServer(
    [{ name: 'gateway.router.v1.RouterService', definition: loadGatewayGrpc().gateway.router.v1.RouterService.service, handlers: service.handlers }],
    connectionAgeOptions(connectionAge),
  );
  return withShutdownSteps(server, { before: () => service.endWatches() });
}
