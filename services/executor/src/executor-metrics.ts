/**
 * The executor's metrics. Labels are the catalog model id (only ids the catalog holds: an unknown
 * id a caller sends is counted as "unknown", so callers cannot grow the label set), the provider
 * and the outcome ("ok", "cancelled" or the failure's stable reason). Never a key.
 */
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';

/** The executor's instruments. */
export interface ExecutorMetrics {
  readonly requests: prometheus.Counter<'model' | 'provider' | 'outcome'>;
  readonly upstreamDuration: prometheus.Histogram<'model' | 'provider' | 'outcome'>;
  /** Retries of one model before the first byte, by the failure that caused them. */
  readonly retries: prometheus.Counter<'model' | 'reason'>;
  /** Models passed over for a fallback (or failed with every fallback), by why. */
  readonly fallbacks: prometheus.Counter<'from' | 'reason'>;
}

/** What the deployment-state gauge reads: each deployment's model, id and state now. */
export type DeploymentStates = () => Array<{ model: string; deployment: string; state: string }>;

/** Registers the executor's metrics on a registry (once per registry). */
export function createExecutorMetrics(registry: prometheus.Registry, deploymentStates?: DeploymentStates, inFlight?: () => number): ExecutorMetrics {
  if (inFlight)
    serviceMetrics(registry, {
      inFlight: metric.gauge(
        'gateway_executor_in_flight',
        'Completions the executor is serving now, over every deployment: the signal to scale the pool on (they mostly wait on upstreams).',
        inFlight,
      ),
    });
  if (deploymentStates) {
    // Read at each scrape: a deployment no longer listed loses its series.
    const openNow = () =>
      deploymentStates().map((entry) => ({
        labels: { model: entry.model, deployment: entry.deployment },
        value: entry.state === 'DEPLOYMENT_STATE_OPEN' ? 1 : 0,
      }));
    serviceMetrics(registry, {
      deploymentOpen: metric.gauge(
        'gateway_executor_deployment_open',
        'Whether a deployment takes no requests now (1: breaker open or held by a rate limit; 0: healthy or probing).',
        ['model', 'deployment'],
        openNow,
      ),
    });
  }
  return serviceMetrics(registry, {
    retries: metric.counterBy('gateway_executor_retries_total', 'Retries of a model before the first byte, by model and the reason of the failure retried.', [
      'model',
      'reason',
    ]),
    fallbacks: metric.counterBy(
      'gateway_executor_fallbacks_total',
      'Models passed over before the first byte (their fallback was tried next), by model and reason.',
      ['from', 'reason'],
    ),
    requests: metric.counterBy('gateway_executor_requests_total', 'Completions run by the executor, by model, provider and outcome.', [
      'model',
      'provider',
      'outcome',
    ]),
    upstreamDuration: metric.histogram(
      'gateway_executor_upstream_duration_seconds',
      'Time from sending a completion upstream to its last byte (whole response or end of stream).',
      // Completions range from a cached 50 ms answer to minutes-long streams.
      [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320],
      ['model', 'provider', 'outcome'],
    ),
  });
}
