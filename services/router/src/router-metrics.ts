import { metric, type prometheus, serviceMetrics } from '@gateway/observability';

/** The router's metrics. Labels are bounded: model ids come from the catalog, policies from a fixed list. */
export interface RouterMetrics {
  /** Successful routing decisions by chosen model and policy ("explicit" for a named model). */
  readonly decisions: prometheus.Counter<'model' | 'policy'>;
}

/** Registers the router's metrics on the process registry. */
export function createRouterMetrics(registry: prometheus.Registry): RouterMetrics {
  return serviceMetrics(registry, {
    decisions: metric.counterBy('gateway_router_decisions_total', 'Routing decisions by chosen model and policy.', ['model', 'policy']),
  });
}
