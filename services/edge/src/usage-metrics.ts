/**
 * The edge's usage-event metrics: what the publisher queued, dropped (by reason), sent again, handed
 * to metering directly, and holds now (how many, and since when). Whether NATS is reachable is
 * `gateway_nats_connected`, which connectNats registers for every service.
 * Usage events are the bill, so a dropped one is revenue lost and a held one revenue late.
 * The publisher counts in plain integers on its hot path; these metrics read the counts when scraped,
 * so a request costs no metric call for its usage event.
 */
import { type UsagePublisher, USAGE_DROP_REASONS, USAGE_REFUSAL_REASONS } from '@gateway/messaging';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';

/** What the metrics read: the counts a UsagePublisher keeps. */
export type UsagePublisherCounts = Pick<
  UsagePublisher,
  'queued' | 'droppedBy' | 'refusedBy' | 'republished' | 'pending' | 'oldestHeldAgeSeconds' | 'handedOver'
>;

/**
 * Registers `gateway_usage_events_queued_total`, `gateway_usage_events_dropped_total{reason}`,
 * `gateway_usage_events_refused_total{reason}`, `gateway_usage_events_republished_total`,
 * `gateway_usage_events_handed_over_total`, `gateway_usage_events_held`,
 * and `gateway_usage_oldest_held_event_age_seconds` on the registry, read from the publisher at
 * each scrape. Every drop and refusal reason is exported
 * from 0, so that an alert on increase() sees the first drop (a series that appears already at 1
 * shows no increase).
 */
// biome-ignore format: one metric a line, a table of what each reads
export function registerUsagePublisherMetrics(registry: prometheus.Registry, publisher: UsagePublisherCounts): void {
  serviceMetrics(registry, {
    queued: metric.count('gateway_usage_events_queued_total', 'Usage events accepted by the edge to be published to JetStream.', () => publisher.queued),
    dropped: metric.countByReason('gateway_usage_events_dropped_total', 'Usage events the edge dropped instead of publishing (usage never billed), by reason.', USAGE_DROP_REASONS, () => publisher.droppedBy),
    refused: metric.countByReason('gateway_usage_events_refused_total', 'Usage event publishes JetStream refused (held and sent again, not dropped), by reason: stream_full, storage_full, no_stream, other.', USAGE_REFUSAL_REASONS, () => publisher.refusedBy),
    republished: metric.count('gateway_usage_events_republished_total', 'Usage events sent again after their publish was refused, not acknowledged in time, or cut by a reconnection.', () => publisher.republished),
    held: metric.gauge('gateway_usage_events_held', 'Usage events the edge holds now: queued, or sent and awaiting their JetStream acknowledgement.', () => publisher.pending),
    oldestHeld: metric.gauge('gateway_usage_oldest_held_event_age_seconds', 'How long the oldest usage event the edge holds has been held (0 when none): usage not on its way to the bill, at any rate of traffic.', () => publisher.oldestHeldAgeSeconds),
    handedOver: metric.count('gateway_usage_events_handed_over_total', 'Usage events handed to metering directly because NATS did not take them: held EDGE_USAGE_HANDOVER_AFTER_MS, or still held at shutdown.', () => publisher.handedOver),
  });
}
