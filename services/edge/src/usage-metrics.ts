/**
 * The edge's usage-event metrics: what the publisher queued, dropped (by reason), sent again, handed
 * to metering directly, and holds now (how many, and since when), and whether NATS is reachable.
 * Usage events are the bill, so a dropped one is revenue lost and a held one revenue late.
 * The publisher counts in plain integers on its hot path; these metrics read the counts when scraped,
 * so a request costs no metric call for its usage event.
 */
import { type ConnectionState, type UsagePublisher, USAGE_DROP_REASONS, USAGE_REFUSAL_REASONS } from '@gateway/messaging';
import { prometheus } from '@gateway/observability';

/** What the metrics read: the counts a UsagePublisher keeps. */
export type UsagePublisherCounts = Pick<
  UsagePublisher,
  'queued' | 'droppedBy' | 'refusedBy' | 'republished' | 'pending' | 'oldestHeldAgeSeconds' | 'handedOver'
>;

/**
 * Registers `gateway_usage_events_queued_total`, `gateway_usage_events_dropped_total{reason}`,
 * `gateway_usage_events_refused_total{reason}`, `gateway_usage_events_republished_total`,
 * `gateway_usage_events_handed_over_total`, `gateway_usage_events_held`,
 * `gateway_usage_oldest_held_event_age_seconds` and `gateway_nats_connected` on the registry, read
 * from the publisher and the connection at each scrape. Every drop and refusal reason is exported
 * from 0, so that an alert on increase() sees the first drop (a series that appears already at 1
 * shows no increase).
 */
export function registerUsagePublisherMetrics(registry: prometheus.Registry, publisher: UsagePublisherCounts, nats: ConnectionState): void {
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
  new prometheus.Gauge({
    name: 'gateway_usage_oldest_held_event_age_seconds',
    help: 'How long the oldest usage event the edge holds has been held (0 when none): usage not on its way to the bill, at any rate of traffic.',
    registers,
    collect() {
      this.set(publisher.oldestHeldAgeSeconds);
    },
  });
  new prometheus.Counter({
    name: 'gateway_usage_events_handed_over_total',
    help: 'Usage events handed to metering directly because NATS did not take them: held EDGE_USAGE_HANDOVER_AFTER_MS, or still held at shutdown.',
    registers,
    collect() {
      this.reset();
      this.inc(publisher.handedOver);
    },
  });
  new prometheus.Gauge({
    name: 'gateway_nats_connected',
    help: 'Whether this process is connected to NATS now (1) or not (0: never yet, reconnecting, closed).',
    registers,
    collect() {
      this.set(nats.connected ? 1 : 0);
    },
  });
}
