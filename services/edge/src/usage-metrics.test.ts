import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { UsagePublisher } from '@gateway/messaging';
import { eventually } from '@gateway/testing';
import { prometheus } from '@gateway/observability';
import { registerUsagePublisherMetrics } from './usage-metrics.js';

/** The value of one series on the registry's exposition, or undefined when it is not exported. */
async function sample(registry: prometheus.Registry, series: string): Promise<number | undefined> {
  const line = (await registry.metrics()).split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('usage publisher metrics', () => {
  it('export what the publisher queued, dropped by reason and holds, every reason from 0', async () => {
    const registry = new prometheus.Registry();
    // A connection that never comes: every event stays held, as while NATS is unreachable.
    const publisher = new UsagePublisher(new Promise(() => {}), createLogger('edge-test', 'silent'), { maxQueue: 2 });
    registerUsagePublisherMetrics(registry, publisher);
    expect(await sample(registry, 'gateway_usage_oldest_held_event_age_seconds')).toBe(0);
    expect(await sample(registry, 'gateway_usage_events_dropped_total{reason="queue_full"}')).toBe(0);
    expect(await sample(registry, 'gateway_usage_events_dropped_total{reason="no_event_id"}')).toBe(0);
    expect(await sample(registry, 'gateway_usage_events_dropped_total{reason="stream_full"}')).toBe(0);
    expect(await sample(registry, 'gateway_usage_events_refused_total{reason="stream_full"}')).toBe(0);
    expect(await sample(registry, 'gateway_usage_events_refused_total{reason="storage_full"}')).toBe(0);

    for (let index = 0; index < 5; index += 1) publisher.publish({ event_id: `event-${index}`, key_id: 'key_test' });
    publisher.publish({ key_id: 'key_test' });
    expect(await sample(registry, 'gateway_usage_events_queued_total')).toBe(2);
    expect(await sample(registry, 'gateway_usage_events_held')).toBe(2);
    expect(await sample(registry, 'gateway_usage_events_dropped_total{reason="queue_full"}')).toBe(3);
    expect(await sample(registry, 'gateway_usage_events_dropped_total{reason="no_event_id"}')).toBe(1);
    expect(await sample(registry, 'gateway_usage_events_republished_total')).toBe(0);
    // Two events are few, but their age keeps growing: what the alert on events held too long reads.
    const firstAge = await eventually(
      async () => ((await sample(registry, 'gateway_usage_oldest_held_event_age_seconds')) ?? 0) >= 0.2 || undefined,
      'the oldest held event to be 0.2 s old',
      5_000,
      20,
    );
    expect(firstAge).toBe(true);

    publisher.close();
    expect(await sample(registry, 'gateway_usage_events_dropped_total{reason="closed"}')).toBe(2);
    // Scraped twice, a counter reads the same: the values are the publisher's, not added up per scrape.
    expect(await sample(registry, 'gateway_usage_events_dropped_total{reason="queue_full"}')).toBe(3);
  });
});
