/**
 * The executor's metrics. Labels are the catalog model id (only ids the catalog holds: an unknown
 * id a caller sends is counted as "unknown", so callers cannot grow the label set), the provider
 * and the outcome ("ok", "cancelled" or the failure's stable reason). Never a key.
 */
import { prometheus } from '@gateway/observability';

/** The executor's instruments. */
export interface ExecutorMetrics {
  readonly requests: prometheus.Counter<'model' | 'provider' | 'outcome'>;
  readonly upstreamDuration: prometheus.Histogram<'model' | 'provider' | 'outcome'>;
}

/** Registers the executor's metrics on a registry (once per registry). */
export function createExecutorMetrics(registry: prometheus.Registry): ExecutorMetrics {
  return {
    requests: new prometheus.Counter({
      name: 'gateway_executor_requests_total',
      help: 'Completions run by the executor, by model, provider and outcome.',
      labelNames: ['model', 'provider', 'outcome'] as const,
      registers: [registry],
    }),
    upstreamDuration: new prometheus.Histogram({
      name: 'gateway_executor_upstream_duration_seconds',
      help: 'Time from sending a completion upstream to its last byte (whole response or end of stream).',
      labelNames: ['model', 'provider', 'outcome'] as const,
      // Completions range from a cached 50 ms answer to minutes-long streams.
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320],
      registers: [registry],
    }),
  };
}
