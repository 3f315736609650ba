/** A service's metrics registry: the default Node metrics, the event loop's delay, and the config reload counter. */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import client from 'prom-client';

/** Creates the registry of a service, with default process metrics labelled by service. */
export function createRegistry(service: string): client.Registry {
  const registry = new client.Registry();
  registry.setDefaultLabels({ service });
  client.collectDefaultMetrics({ register: registry, prefix: 'gateway_' });
  registerEventLoopDelay(registry);
  return registry;
}

/** How often the event loop is sampled for its delay. */
const EVENT_LOOP_RESOLUTION_MS = 10;

/**
 * `gateway_event_loop_delay_p99_seconds` and `gateway_event_loop_delay_max_seconds`: how late the
 * event loop ran a timer, between two scrapes (each scrape starts a new interval). A request
 * handler that holds the loop for 30 ms shows as a max of about 0.03. Node's histogram counts the
 * sampling interval itself in every sample (an idle loop reads 10 ms, as prom-client's default
 * `nodejs_eventloop_lag_*` gauges do); these subtract it, so an idle loop reads about 0.
 */
function registerEventLoopDelay(registry: client.Registry): void {
  const histogram = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  histogram.enable();
  const seconds = (nanoseconds: number) => (Number.isFinite(nanoseconds) ? Math.max(0, nanoseconds / 1e9 - EVENT_LOOP_RESOLUTION_MS / 1e3) : 0);
  new client.Gauge({
    name: 'gateway_event_loop_delay_p99_seconds',
    help: '99th percentile of the event loop delay since the previous scrape, less the 10 ms sampling interval.',
    registers: [registry],
    collect() {
      this.set(histogram.count > 0 ? seconds(histogram.percentile(99)) : 0);
    },
  });
  new client.Gauge({
    name: 'gateway_event_loop_delay_max_seconds',
    help: 'Longest event loop delay since the previous scrape, less the 10 ms sampling interval.',
    registers: [registry],
    collect() {
      this.set(histogram.count > 0 ? seconds(histogram.max) : 0);
      histogram.reset();
    },
  });
}

/**
 * `gateway_config_reload_total{file,outcome}`: each change of a reloaded configuration file
 * (`file`: catalog, plans) that was applied (`success`) or refused, the old one kept (`invalid`,
 * `unreadable`). Registered once per registry; a second call returns the same counter.
 */
export function configReloadCounter(registry: client.Registry): client.Counter<'file' | 'outcome'> {
  const existing = registry.getSingleMetric('gateway_config_reload_total');
  if (existing) return existing as client.Counter<'file' | 'outcome'>;
  return new client.Counter({
    name: 'gateway_config_reload_total',
    help: 'Changes of a reloaded configuration file (catalog, plans): applied (success) or refused with the old one kept (invalid, unreadable).',
    labelNames: ['file', 'outcome'],
    registers: [registry],
  });
}
