/**
 * The edge's HTTP metrics: requests by route and status, and their duration, counted in an
 * onResponse hook, and the requests answered with an error. The public and the admin listener's
 * apps (EDGE_ADMIN_PORT) count into the same series of one registry.
 */
import type { onResponseHookHandler } from 'fastify';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';

/**
 * Requests by route and status, and their duration. Hooks in callback style, and the metrics'
 * label children kept per route and status: they run on every request, where a promise or a
 * label lookup each is a measurable share of the edge.
 */
export function httpMetricsHook(registry: prometheus.Registry): onResponseHookHandler {
  // Shared: the second app on the registry takes the first one's metrics.
  // biome-ignore format: one metric a line, a table of name, help, labels and buckets
  const { requests, duration } = serviceMetrics(registry, {
    requests: metric.counterBy('gateway_http_requests_total', 'HTTP requests by route and status.', ['route', 'status']),
    duration: metric.histogram('gateway_http_request_duration_seconds', 'Time from request to the end of the response.', [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], ['route']),
  }, { shared: true });
  const requestCounters = new Map<string, { inc(): void }>();
  const durationHistograms = new Map<string, { observe(value: number): void }>();
  return (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const status = reply.statusCode;
    const key = `${status} ${route}`;
    let counter = requestCounters.get(key);
    if (!counter) requestCounters.set(key, (counter = requests.labels({ route, status: String(status) })));
    counter.inc();
    let histogram = durationHistograms.get(route);
    if (!histogram) durationHistograms.set(route, (histogram = duration.labels({ route })));
    histogram.observe(reply.elapsedTime / 1000);
    done();
  };
}

/** Requests answered with an error, by status and OpenAI error type and code (shared by both apps, as above). */
export function errorCounter(registry: prometheus.Registry): prometheus.Counter<'status' | 'type' | 'code'> {
  // biome-ignore format: one metric a line
  return serviceMetrics(registry, { errors: metric.counterBy('gateway_errors_total', 'Requests answered with an error, by status and OpenAI error type and code.', ['status', 'type', 'code']) }, { shared: true }).errors;
}
