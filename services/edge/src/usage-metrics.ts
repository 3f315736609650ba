/**
 * The edge's usage-event metrics: what the publisher queued, dropped (by reason), sent again, and
 * holds now. Usage events are the bill, so a dropped one is revenue lost and a held one revenue late.
 * The publisher counts in plain integers on its hot path; these metrics read the counts when scraped,
 * so a request costs no metric call for its usage event.
 */
import { type UsagePublisher, USAGE_DROP_REASONS, USAGE_REFUSAL_REASONS } from '@gateway/messaging';
import { prometheus } from '@gateway/observability';

/** What the metrics read: the counts a UsagePublisher keeps. */
export type UsagePublisherCounts = Pick<UsagePublisher, 'queued' | 'droppedBy' | 'refusedBy' | 'republished' | 'pending'>;

/**
 * Registers `gateway_usage_events_queued_total`, `gateway_usage_events_dropped_total{reason}`,
 * `gateway_usage_events_refused_total{reason}`, `gateway_usage_events_republished_total` and
 * `gateway_usage_events_held` on the registry, read from the publisher at each scrape. Every drop
 * and refusal reason is exported from 0, so that an alert on
 * increase() sees the first drop (a series that appears already at 1 shows no increase).
 */
export function registerUsagePublisherMetrics(registry: prometheus.Registry, publisher: UsagePublisherCounts): void {
  const registers = [registry];
  new prometheus.Counter({
    name: 'gateway_usage_events_queued_total',
    help: 'Usage events accepted by the edge to be published to JetStream.',
    registers,
    collect() {
      this.reset();
      this.inc(publisher.queued);
    },
  });
  new prometheus.Counter({
    name: 'gateway_usage_events_dropped_total',
    help: 'Usage events the edge dropped instead of publishing (usage never billed), by reason.',
    labelNames: ['reason'],
    registers,
    collect() {
      const dropped = publisher.droppedBy;
      this.reset();
      for (const reason of USAGE_DROP_REASONS) this.inc({ reason }, dropped[reason]);
    },
  });
  new prometheus.Counter({
    name: 'gateway_usage_events_refused_total',
    help: 'Usage event publishes JetStream refused (held and sent again, not dropped), by reason: stream_full, storage_full, no_stream, other.',
    labelNames: ['reason'],
    registers,
    collect() {
      const refused = publisher.refusedBy;
      this.reset();
      for (const reason of USAGE_REFUSAL_REASONS) this.inc({ reason }, refused[reason]);
    },
  });
  new prometheus.Counter({
    name: 'gateway_usage_events_republished_total',
    help: 'Usage events sent again after their publish was refused, not acknowledged in time, or cut by a reconnection.',
    registers,
    collect() {
      this.reset();
      this.inc(publisher.republished);
    },
  });
  new prometheus.Gauge({
    name: 'gateway_usage_events_held',
    help: 'Usage events the edge holds now: queued, or sent and awaiting their JetStream acknowledgement.',
    registers,
    collect() {
      this.set(publisher.pending);
    },
  });
}
