/**
 * The edge's HTTP metrics: requests by route and status, and their duration, counted in an
 * onResponse hook. The public and the admin listener's apps (EDGE_ADMIN_PORT) count into the
 * same series of one registry.
 */
import type { onResponseHookHandler } from 'fastify';
import { prometheus } from '@gateway/observability';

/**
 * A metric of the registry by name, created by `create` the first time: the public and the admin
 * listener's apps (EDGE_ADMIN_PORT) count into the same series.
 */
export function sharedMetric<O extends { name: string }, T>(
  registry: prometheus.Registry,
  options: O,
  create: (options: O & { registers: prometheus.Registry[] }) => T,
): T {
  return (registry.getSingleMetric(options.name) as T | undefined) ?? create({ ...options, registers: [registry] });
}

/**
 * Requests by route and status, and their duration. Hooks in callback style, and the metrics'
 * label children kept per route and status: they run on every request, where a promise or a
 * label lookup each is a measurable share of the edge.
 */
export function httpMetricsHook(registry: prometheus.Registry): onResponseHookHandler {
  // Each name spelled out as `name: '...'`: check-manifests reads them to check the alerts' metrics.
  const requests = sharedMetric(
    registry,
    { name: 'gateway_http_requests_total', help: 'HTTP requests by route and status.', labelNames: ['route', 'status'] },
    (options) => new prometheus.Counter(options),
  );
  const duration = sharedMetric(
    registry,
    {
      name: 'gateway_http_request_duration_seconds',
      help: 'Time from request to the end of the response.',
      labelNames: ['route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    },
    (options) => new prometheus.Histogram(options),
  );
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
