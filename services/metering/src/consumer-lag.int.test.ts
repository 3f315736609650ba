/**
 * Metering's lag, read from the durable consumer in a real JetStream: events published while
 * metering is stopped show as pending, with the age of the oldest; once metering consumes them both
 * go back to 0.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import type { Catalog } from '@gateway/catalog';
import { createLogger } from '@gateway/logger';
import { UsagePublisher } from '@gateway/messaging';
import { createRegistry, type prometheus } from '@gateway/observability';
import { connectRedis, type RedisClient } from '@gateway/redis';
import { eventually, natsServers, natsUrl, redisUrl, TEST_USAGE_STREAM_MAX_BYTES } from '@gateway/testing';
import { createServer } from './app.js';
import { createConsumerLag } from './consumer-lag.js';
import { testModel } from './testing/catalog-model.js';

const logger = createLogger('consumer-lag-test', 'silent');
const id = randomUUID().replaceAll('-', '');
const MODEL = `test-lag-${id.slice(0, 8)}`;
const model = testModel(MODEL, { input_micro_usd_per_mtok: 150_000, cached_input_micro_usd_per_mtok: 75_000, output_micro_usd_per_mtok: 600_000 });
const catalog: Catalog = { models: [model], byId: new Map([[MODEL, model]]) };
const names = { stream: `USAGE_LAG_${id}`, subject: `lag.${id}.usage.v1.completion`, subjects: [`lag.${id}.usage.v1.>`], durableName: `metering-${id}` };

/** A gauge's value on a registry. */
async function gauge(registry: prometheus.Registry, name: string): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`${name} is not registered`);
  return (await metric.get()).values[0]?.value ?? Number.NaN;
}

/** Metering of this test's stream, with a registry of its own and the lag read every 200 ms. */
function metering(nc: NatsConnection, redis: RedisClient) {
  const registry = createRegistry('metering-lag-test');
  return {
    registry,
    server: createServer({ nc, redis, catalog, logger, registry, ...names, maxBytes: TEST_USAGE_STREAM_MAX_BYTES, backoffMs: [200, 400], lagIntervalMs: 200 }),
  };
}

describe('metering lag', () => {
  let nc: NatsConnection;
  let redis: RedisClient;

  beforeAll(async () => {
    nc = await connect({ servers: natsServers(await natsUrl()) });
    redis = connectRedis(await redisUrl());
  });

  afterAll(async () => {
    await (await nc.jetstreamManager()).streams.delete(names.stream).catch(() => undefined);
    await nc.drain();
    await redis.quit();
  });

  it("shows the events published while metering is stopped, with the oldest one's age, and 0 once they are metered", async () => {
    // A first run creates the stream and the durable consumer, then metering stops.
    const first = metering(nc, redis);
    await first.server.start();
    expect(await gauge(first.registry, 'gateway_metering_consumer_pending_messages')).toBe(0);
    expect(await gauge(first.registry, 'gateway_metering_oldest_unmetered_age_seconds')).toBe(0);
    await first.server.stop();

    const publisher = new UsagePublisher(nc, logger, { subject: names.subject, maxBatch: 1 });
    const publishedAt = Date.now();
    for (let index = 0; index < 5; index += 1)
      publisher.publish({
        event_id: `evt-${randomUUID()}`,
        key_id: `key_lag${id.slice(0, 8)}`,
        model_id: MODEL,
        provider: 'simulated',
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cached_tokens: 0 },
        received_at_ms: publishedAt,
        outcome: 'OUTCOME_COMPLETED',
      });
    await publisher.flush(5_000);
    publisher.close();
    expect(publisher.published).toBe(5);
    await new Promise((resolve) => setTimeout(resolve, 1_200));

    // Read from outside while nothing consumes: all five pending, the oldest over a second old.
    const outside = createConsumerLag({ nc, ...names, logger });
    const reading = await outside.poll();
    expect(reading?.pendingMessages).toBe(5);
    expect(reading?.oldestAgeSeconds).toBeGreaterThanOrEqual(1);
    expect(reading?.oldestAgeSeconds).toBeLessThan((Date.now() - publishedAt) / 1000 + 1);

    // Metering back: its first reading, taken before it consumes, reports what it found waiting...
    const second = metering(nc, redis);
    await second.server.start();
    try {
      expect(await gauge(second.registry, 'gateway_metering_consumer_pending_messages')).toBe(5);
      expect(await gauge(second.registry, 'gateway_metering_oldest_unmetered_age_seconds')).toBeGreaterThanOrEqual(1);
      // ...and once the events are metered and acknowledged, both gauges read 0.
      await eventually(
        async () =>
          (await gauge(second.registry, 'gateway_metering_consumer_pending_messages')) === 0 &&
          (await gauge(second.registry, 'gateway_metering_oldest_unmetered_age_seconds')) === 0,
        'the lag to go back to 0',
        10_000,
      );
      expect((await outside.poll())?.pendingMessages).toBe(0);
    } finally {
      await second.server.stop();
    }
  }, 30_000);

  it('reads nothing, and fails nothing, before the durable consumer exists', async () => {
    const lag = createConsumerLag({ nc, stream: names.stream, durableName: `never-${id}`, logger });
    expect(await lag.poll()).toBeUndefined();
  });

  it('reads unknown (NaN) once JetStream cannot be read, and the time of the last reading stands still', async () => {
    // The durable consumer of the first test exists; a connection of this test's own is lost.
    const own = await connect({ servers: natsServers(await natsUrl()) });
    const registry = createRegistry('metering-lag-test');
    const lag = createConsumerLag({ nc: own, ...names, logger, registry });
    expect(await lag.poll()).toEqual({ pendingMessages: 0, oldestAgeSeconds: 0 });
    const readAt = await gauge(registry, 'gateway_metering_lag_last_read_timestamp_seconds');
    expect(Math.abs(readAt - Date.now() / 1000)).toBeLessThan(5);
    await own.close();
    expect(await lag.poll()).toBeUndefined();
    expect(await gauge(registry, 'gateway_metering_consumer_pending_messages')).toBeNaN();
    expect(await gauge(registry, 'gateway_metering_oldest_unmetered_age_seconds')).toBeNaN();
    expect(await gauge(registry, 'gateway_metering_lag_last_read_timestamp_seconds')).toBe(readAt);
    // prom-client writes `Nan`, which Prometheus reads as NaN (Go's ParseFloat ignores the case).
    expect((await registry.metrics()).split('\n')).toContainEqual(expect.stringMatching(/^gateway_metering_consumer_pending_messages(\{.*\})? NaN$/i));
  });
});
