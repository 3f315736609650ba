import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import { costPicoUsd, type Catalog } from '@gateway/catalog';
import { createLogger } from '@gateway/logger';
import { encodeUsageEvent, encodeUsageEventBatch, UsagePublisher } from '@gateway/messaging';
import { createRegistry, type prometheus } from '@gateway/observability';
import type { UsageEvent } from '@gateway/proto';
import { eventually, natsServers, natsUrl, redisUrl, startTcpProxy, TEST_USAGE_STREAM_MAX_BYTES } from '@gateway/testing';
import { callUnary, createClient, GatewayError } from '@gateway/grpc';
import { loadGatewayGrpc, type RecordUsageEventsRequest, type RecordUsageEventsResponseOutput } from '@gateway/proto';
import { createServer, type MeteringDependencies, type MeteringServer } from './app.js';
import { testModel } from './testing/catalog-model.js';
import { connectRedis, createRedis, deleteMatching, parseRedisUrl, type RedisClient } from '@gateway/redis';
import { dailyKey, dedupKey, spendDayField, spendKeyName, utcMonth } from '@gateway/keyspace';
import { readRecent } from './usage-buckets.js';
import { isMetered, keyModelTotals, keyTotals, modelTotals, recordEvent } from './usage-store.js';

const logger = createLogger('metering-test', 'silent');
const run = randomUUID().slice(0, 8);

/** Two models of this run: $2.50 / $1.25 cached / $10 per million tokens, and a cheap one. */
const PREMIUM = `test-premium-${run}`;
const ECONOMY = `test-economy-${run}`;
/** A model priced as claude-sonnet-4: $3 input, $0.30 cache reads, $3.75 / $6 cache writes (5m / 1h), $15 output. */
const CACHING = `test-caching-${run}`;

// Built by hand until loadCatalog lands; metering only uses byId and pricing.
const models = [
  testModel(PREMIUM, { input_micro_usd_per_mtok: 2_500_000, cached_input_micro_usd_per_mtok: 1_250_000, output_micro_usd_per_mtok: 10_000_000 }),
  testModel(ECONOMY, { input_micro_usd_per_mtok: 150_000, cached_input_micro_usd_per_mtok: 75_000, output_micro_usd_per_mtok: 600_000 }),
  testModel(CACHING, {
    input_micro_usd_per_mtok: 3_000_000,
    cached_input_micro_usd_per_mtok: 300_000,
    output_micro_usd_per_mtok: 15_000_000,
    cache_write_micro_usd_per_mtok: 3_750_000,
    cache_write_1h_micro_usd_per_mtok: 6_000_000,
  }),
];
const catalog: Catalog = { models, byId: new Map(models.map((entry) => [entry.id, entry])) };

/** A key's totals after one usageEvent() on PREMIUM: (1200 - 200) x 2.5 + 200 x 1.25 + 350 x 10 micro-USD. */
const ONE_EVENT_TOTALS = {
  requests: 1,
  prompt_tokens: 1_200,
  completion_tokens: 350,
  cached_tokens: 200,
  cache_write_tokens: 0,
  cost_pico_usd: 6_250_000_000n,
  cost_usd: 0.00625,
  cache_hits: 0,
  saved_cost_pico_usd: 0n,
};

function usageEvent(overrides: Partial<UsageEvent> = {}): UsageEvent {
  return {
    event_id: `evt-${randomUUID()}`,
    key_id: `key_${run}test`,
    model_id: PREMIUM,
    provider: 'simulated',
    usage: { prompt_tokens: 1_200, completion_tokens: 350, total_tokens: 1_550, cached_tokens: 200 },
    received_at_ms: 1_763_700_000_000,
    latency_ms: 420,
    outcome: 'OUTCOME_COMPLETED',
    requested_model: 'auto',
    ...overrides,
  };
}

async function counterValue(registry: prometheus.Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  return values
    .filter((value) => Object.entries(labels).every(([label, expected]) => value.labels[label] === expected))
    .reduce((sum, value) => sum + value.value, 0);
}

/** A stream, subject and metering consumer of one test group, so nothing else reads or writes them. */
async function startMetering(
  nc: NatsConnection,
  redis: RedisClient,
  options: Partial<Pick<MeteringDependencies, 'dedupRetentionMs' | 'dedupPruneIntervalMs' | 'quotaPrefix' | 'catalog' | 'unknownModelGraceMs'>> = {},
  id = randomUUID().replaceAll('-', ''),
) {
  const names = { stream: `USAGE_TEST_${id}`, subject: `test.${id}.usage.v1.completion`, subjects: [`test.${id}.usage.v1.>`] };
  const registry = createRegistry('metering-test');
  const metering: MeteringServer = createServer({
    nc,
    redis,
    catalog,
    logger,
    registry,
    ...names,
    maxBytes: TEST_USAGE_STREAM_MAX_BYTES,
    durableName: `metering-${id}`,
    backoffMs: [200, 400],
    ...options,
  });
  await metering.start();
  return { ...names, registry, metering, publisher: new UsagePublisher(nc, logger, { subject: names.subject }) };
}

describe('metering', () => {
  let nc: NatsConnection;
  let redis: RedisClient;
  let inspector: RedisClient;
  let main: Awaited<ReturnType<typeof startMetering>>;
  const streams: string[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: natsServers(await natsUrl()) });
    redis = createRedis(await redisUrl(), logger);
    inspector = connectRedis(await redisUrl());
    await eventually(() => redis.status === 'ready', 'redis to be ready');
    main = await startMetering(nc, redis);
    streams.push(main.stream);
  });

  afterAll(async () => {
    await main.metering.stop();
    main.publisher.close();
    const manager = await nc.jetstreamManager();
    for (const stream of streams) await manager.streams.delete(stream).catch(() => undefined);
    await deleteMatching(inspector, `metering:*${run}*`);
    await Promise.all(
      (await inspector.smembers('metering:keys')).filter((keyId) => keyId.includes(run)).map((keyId) => inspector.srem('metering:keys', keyId)),
    );
    await nc.drain();
    redis.disconnect();
    await inspector.quit();
  });

  it("settles the quota reservation an event names with the event's total tokens, once, however often the event comes", async () => {
    const prefix = `metering-test-${run}:`;
    const settling = await startMetering(nc, redis, { quotaPrefix: prefix });
    streams.push(settling.stream);
    try {
      // A reservation of 5,000 tokens as auth's CheckKey leaves it in the key's window.
      const keyId = `key_${run}settles1`;
      const window = `${prefix}window:{${keyId}}:`;
      const [seconds] = await inspector.time();
      const now = Number(seconds) * 1000;
      await inspector
        .multi()
        .zadd(`${window}requests`, now, 'r1')
        .zadd(`${window}tokens`, now, 'r1')
        .hset(`${window}charges`, 't:r1', 5_000, 'total', 5_000)
        .exec();
      const event = usageEvent({ key_id: keyId, reservation_id: `${keyId}:r1` });
      settling.publisher.publish(event);
      settling.publisher.publish({ ...event });
      await eventually(async () => (await keyTotals(redis, keyId)).requests === 1, 'the event to be metered');
      // Redelivered after it was metered: neither metered nor settled again.
      expect(
        await recordEvent(redis, {
          stream: settling.stream,
          eventId: event.event_id!,
          sequence: 1,
          usage: { key_id: keyId, model_id: PREMIUM, prompt_tokens: 1, completion_tokens: 1, cached_tokens: 0, cost_pico_usd: 1n },
          settlement: { reservationId: `${keyId}:r1`, actualTokens: 99, prefix },
        }),
      ).toBe(false);
      expect(await inspector.hgetall(`${window}charges`)).toEqual({ 't:r1': '1550', 's:r1': '1', total: '1550' });
      expect((await keyTotals(redis, keyId)).requests).toBe(1);
      await inspector.del(`${window}requests`, `${window}tokens`, `${window}charges`, `${window}pending`);
    } finally {
      await settling.metering.stop();
      settling.publisher.close();
    }
  });

  it('meters a response-cache hit at its hit cost, sums what it saved, counts none of its tokens, and settles its reservation with none unless they count', async () => {
    const prefix = `metering-test-${run}-hits:`;
    const hits = await startMetering(nc, redis, { quotaPrefix: prefix });
    streams.push(hits.stream);
    try {
      // Three reservations of 5,000 tokens, as auth's CheckKey leaves them in the key's window.
      const keyId = `key_${run}cachehit`;
      const window = `${prefix}window:{${keyId}}:`;
      const [seconds] = await inspector.time();
      const now = Number(seconds) * 1000;
      const reserving = inspector.multi();
      for (const charge of ['r1', 'r2', 'r3'])
        reserving.zadd(`${window}requests`, now, charge).zadd(`${window}tokens`, now, charge).hset(`${window}charges`, `t:${charge}`, 5_000);
      await reserving.hset(`${window}charges`, 'total', 15_000).exec();
      // The stored answer's tokens, as the edge reports them for a hit: priced by the catalog, 6,250 micro-USD.
      const cache = { status: 'hit', age_ms: 42_000, saved_cost_pico_usd: 6_250_000_000 };
      // A hit at the default cost (0), the edge reporting nothing; one at a tenth, its tokens counted.
      const free = usageEvent({ key_id: keyId, reservation_id: `${keyId}:r1`, cache: { ...cache, cost_pico_usd: 0, count_tokens: false } });
      const charged = usageEvent({
        key_id: keyId,
        reservation_id: `${keyId}:r2`,
        reported_cost_pico_usd: 625_000_000,
        cache: { ...cache, cost_pico_usd: 625_000_000, count_tokens: true },
      });
      // A miss is metered as any request: the catalog's price of its tokens.
      const missed = usageEvent({ key_id: keyId, reservation_id: `${keyId}:r3`, reported_cost_pico_usd: 6_250_000_000, cache: { status: 'miss' } });
      for (const event of [free, charged, missed]) hits.publisher.publish(event);
      hits.publisher.publish({ ...free });
      await hits.publisher.flush(5_000);
      // A redelivery of the free hit: a distinct message, which JetStream cannot de-duplicate.
      await nc.jetstream().publish(hits.subject, encodeUsageEvent(free), { msgID: `redelivery-${free.event_id}` });
      await eventually(
        async () => (await counterValue(hits.registry, 'gateway_metering_events_total', { result: 'duplicate' })) >= 1,
        'the redelivered hit to be seen as a duplicate',
      );
      await eventually(async () => (await keyTotals(redis, keyId)).requests === 3, 'the three events to be metered');

      expect(await keyTotals(redis, keyId)).toEqual({
        ...ONE_EVENT_TOTALS,
        requests: 3,
        cost_pico_usd: 6_250_000_000n + 625_000_000n,
        cost_usd: 0.006875,
        cache_hits: 2,
        saved_cost_pico_usd: 12_500_000_000n,
      });
      expect(await keyModelTotals(redis, keyId, PREMIUM)).toMatchObject({
        requests: 3,
        prompt_tokens: 1_200,
        cache_hits: 2,
        saved_cost_pico_usd: 12_500_000_000n,
      });
      // Settled: the free hit with no tokens, the charged one with its total (count_tokens), the miss with its total.
      expect(await inspector.hgetall(`${window}charges`)).toEqual({
        't:r1': '0',
        's:r1': '1',
        't:r2': '1550',
        's:r2': '1',
        't:r3': '1550',
        's:r3': '1',
        total: '3100',
      });
      // The buckets: three requests, two of them hits, one request's tokens.
      const receivedAt = 1_763_700_000_000;
      const day = new Date(receivedAt).getUTCDate();
      const daily = await inspector.hgetall(dailyKey(keyId, PREMIUM, utcMonth(receivedAt)));
      expect(daily).toMatchObject({ [`${day}:r`]: '3', [`${day}:p`]: '1200', [`${day}:c`]: '350', [`${day}:h`]: '2', [`${day}:s`]: '12500000000' });
      // The budget spends the hits' cost only.
      expect(await inspector.hget(spendKeyName(keyId), spendDayField(receivedAt))).toBe('6875000000');
      // The edge's reported cost of a hit is its hit cost: no mismatch.
      expect(await counterValue(hits.registry, 'gateway_metering_cost_mismatch_total')).toBe(0);
      expect(await counterValue(hits.registry, 'gateway_metering_tokens_total', { kind: 'prompt' })).toBe(1_200);
      // The latest requests show what the cache did, with the stored answer's tokens.
      const recent = (await readRecent(redis, 10, keyId)).map((json) => JSON.parse(json) as Record<string, unknown>);
      const byEvent = new Map(recent.map((entry) => [entry.event_id, entry]));
      expect(recent).toHaveLength(3);
      expect(byEvent.get(free.event_id)).toMatchObject({
        cache_status: 'hit',
        cache_age_ms: 42_000,
        saved_cost_pico_usd: '6250000000',
        cost_pico_usd: '0',
        prompt_tokens: 1_200,
        completion_tokens: 350,
      });
      expect(byEvent.get(charged.event_id)).toMatchObject({ cache_status: 'hit', cost_pico_usd: '625000000' });
      expect(byEvent.get(missed.event_id)).toMatchObject({ cache_status: 'miss', cache_age_ms: 0, saved_cost_pico_usd: '0', cost_pico_usd: '6250000000' });
      await inspector.del(`${window}requests`, `${window}tokens`, `${window}charges`, `${window}pending`);
    } finally {
      await hits.metering.stop();
      hits.publisher.close();
    }
  });

  it('meters a published event with the exact catalog cost, on its key and its model', async () => {
    const event = usageEvent({ key_id: `key_${run}exact` });
    const modelBefore = await modelTotals(redis, PREMIUM);
    main.publisher.publish(event);
    const totals = await eventually(async () => {
      const found = await keyTotals(redis, event.key_id!);
      return found.requests === 1 && found;
    }, 'the event to be metered');
    // (1200 - 200) x 2.5 + 200 x 1.25 + 350 x 10 micro-USD = 6,250 micro-USD = 6.25e9 pico-USD.
    expect(totals).toEqual(ONE_EVENT_TOTALS);
    expect(totals.cost_pico_usd).toBe(costPicoUsd(models[0].pricing, event.usage!));
    const modelAfter = await modelTotals(redis, PREMIUM);
    expect(modelAfter.requests - modelBefore.requests).toBeGreaterThanOrEqual(1);
    expect(await isMetered(redis, main.stream, event.key_id!, event.event_id!)).toBe(true);
  });

  it('meters cache writes at their 5-minute and 1-hour prices and sums them into totals and buckets', async () => {
    const keyId = `key_${run}cachewrite`;
    const usage = {
      prompt_tokens: 188_000,
      completion_tokens: 2_000,
      total_tokens: 190_000,
      cached_tokens: 120_000,
      cache_write_tokens: 58_000,
      cache_write_5m_tokens: 50_000,
      cache_write_1h_tokens: 8_000,
    };
    const events = [usageEvent({ key_id: keyId, model_id: CACHING, usage }), usageEvent({ key_id: keyId, model_id: CACHING, usage })];
    for (const event of events) main.publisher.publish(event);
    await eventually(async () => (await keyTotals(redis, keyId)).requests === 2 || undefined, 'both events to be metered');
    // Each: 10,000 x 3 + 50,000 x 3.75 + 8,000 x 6 + 120,000 x 0.30 + 2,000 x 15 micro-USD = 331,500 micro-USD.
    expect(await keyTotals(redis, keyId)).toEqual({
      requests: 2,
      prompt_tokens: 376_000,
      completion_tokens: 4_000,
      cached_tokens: 240_000,
      cache_write_tokens: 116_000,
      cost_pico_usd: 663_000_000_000n,
      cost_usd: 0.663,
      cache_hits: 0,
      saved_cost_pico_usd: 0n,
    });
    // The events' day (their hourly buckets are past retention): its daily bucket counts the writes.
    const receivedAt = 1_763_700_000_000;
    const day = new Date(receivedAt).getUTCDate();
    const daily = await inspector.hgetall(dailyKey(keyId, CACHING, utcMonth(receivedAt)));
    expect(daily).toMatchObject({ [`${day}:r`]: '2', [`${day}:k`]: '240000', [`${day}:w`]: '116000', [`${day}:$`]: '663000000000' });
  });

  it('counts an event once however often it is published or redelivered', async () => {
    const keyId = `key_${run}dup`;
    const event = usageEvent({ key_id: keyId });
    main.publisher.publish(event);
    main.publisher.publish(event);
    await main.publisher.flush(5_000);
    // A redelivery: the same event as a distinct message, which JetStream cannot de-duplicate.
    await nc.jetstream().publish(main.subject, encodeUsageEvent(event), { msgID: `redelivery-${event.event_id}` });
    await eventually(
      async () => (await counterValue(main.registry, 'gateway_metering_events_total', { result: 'duplicate' })) >= 1,
      'the redelivery to be seen as a duplicate',
    );
    expect(await keyTotals(redis, keyId)).toEqual(ONE_EVENT_TOTALS);
  });

  it('meters every event of a batch once, skips only its poison events, and meters none twice when the batch comes again', async () => {
    const batching = await startMetering(nc, redis);
    streams.push(batching.stream);
    try {
      const keyId = `key_${run}batch`;
      const good = [
        usageEvent({ key_id: keyId }),
        usageEvent({ key_id: keyId }),
        usageEvent({ key_id: keyId, usage: { prompt_tokens: 10, completion_tokens: 5 } }),
      ];
      const batch = encodeUsageEventBatch([good[0]!, usageEvent({ model_id: 'no-such-model' }), good[1]!, good[2]!]);
      await nc.jetstream().publish(batching.subject, batch, { msgID: `batch-${run}-1` });
      await eventually(async () => (await keyTotals(redis, keyId)).requests === 3, 'the batch to be metered');
      // The same batch again as another message (a publisher that lost its acknowledgement after
      // the stream's duplicate window): nothing is metered twice.
      await nc.jetstream().publish(batching.subject, batch, { msgID: `batch-${run}-2` });
      await eventually(
        async () => (await counterValue(batching.registry, 'gateway_metering_poison_messages_total', { reason: 'unknown_model' })) === 2,
        'the poison event of both copies to be counted',
      );
      await eventually(
        async () => (await counterValue(batching.registry, 'gateway_metering_events_total', { result: 'duplicate' })) === 3,
        'the second copy to be seen as duplicates',
      );
      const totals = await keyTotals(redis, keyId);
      expect(totals.requests).toBe(3);
      expect(totals.cost_pico_usd).toBe(good.reduce((sum, event) => sum + costPicoUsd(models[0].pricing, event.usage!), 0n));
    } finally {
      await batching.metering.stop();
      batching.publisher.close();
    }
  });

  it('prices with the catalog in use when it meters, and retries a model the catalog gains after the event came', async () => {
    const added = `test-added-${run}`;
    const source = { current: catalog };
    const reloading = await startMetering(nc, redis, { catalog: source, unknownModelGraceMs: 60_000 });
    streams.push(reloading.stream);
    try {
      const keyId = `key_${run}reload`;
      // A model the edges serve before this replica's catalog file has it: retried, not dropped.
      const early = usageEvent({ key_id: keyId, model_id: added, received_at_ms: Date.now() });
      reloading.publisher.publish(early);
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect((await keyTotals(redis, keyId)).requests).toBe(0);
      expect(await counterValue(reloading.registry, 'gateway_metering_poison_messages_total')).toBe(0);
      // The file is reloaded: the new model, and PREMIUM at twice its prices.
      const doubled = testModel(PREMIUM, {
        input_micro_usd_per_mtok: 5_000_000,
        cached_input_micro_usd_per_mtok: 2_500_000,
        output_micro_usd_per_mtok: 20_000_000,
      });
      const newModel = testModel(added, {
        input_micro_usd_per_mtok: 1_000_000,
        cached_input_micro_usd_per_mtok: 1_000_000,
        output_micro_usd_per_mtok: 1_000_000,
      });
      const next = [doubled, models[1]!, models[2]!, newModel];
      source.current = { models: next, byId: new Map(next.map((entry) => [entry.id, entry])) };
      await eventually(async () => (await keyTotals(redis, keyId)).requests === 1, 'the retried event to be metered');
      // 1,550 tokens at $1 per million.
      expect((await keyTotals(redis, keyId)).cost_pico_usd).toBe(1_550_000_000n);
      reloading.publisher.publish(usageEvent({ key_id: keyId }));
      await eventually(async () => (await keyTotals(redis, keyId)).requests === 2, 'the event at the new price to be metered');
      expect((await keyTotals(redis, keyId)).cost_pico_usd).toBe(1_550_000_000n + 2n * ONE_EVENT_TOTALS.cost_pico_usd);
      // Past the grace, a model no catalog has is poison as before.
      reloading.publisher.publish(usageEvent({ key_id: keyId, model_id: 'no-such-model', received_at_ms: Date.now() - 61_000 }));
      await eventually(
        async () => (await counterValue(reloading.registry, 'gateway_metering_poison_messages_total', { reason: 'unknown_model' })) === 1,
        'the old unknown model to be poison',
      );
    } finally {
      await reloading.metering.stop();
      reloading.publisher.close();
    }
  });

  it('reads the catalog file again before it gives up on a model it lacks', async () => {
    const late = `test-late-${run}`;
    const withLate = [
      ...models,
      testModel(late, { input_micro_usd_per_mtok: 1_000_000, cached_input_micro_usd_per_mtok: 1_000_000, output_micro_usd_per_mtok: 1_000_000 }),
    ];
    let reads = 0;
    // The file already has the model; the watch has not told this replica yet.
    const source = {
      current: catalog,
      check() {
        reads += 1;
        source.current = { models: withLate, byId: new Map(withLate.map((entry) => [entry.id, entry])) };
      },
    };
    const checking = await startMetering(nc, redis, { catalog: source });
    streams.push(checking.stream);
    try {
      const keyId = `key_${run}late`;
      checking.publisher.publish(usageEvent({ key_id: keyId, model_id: late }));
      await eventually(async () => (await keyTotals(redis, keyId)).requests === 1, 'the event to be metered');
      expect(reads).toBe(1);
      expect(await counterValue(checking.registry, 'gateway_metering_poison_messages_total')).toBe(0);
    } finally {
      await checking.metering.stop();
      checking.publisher.close();
    }
  });

  it('terminates and counts poison messages, and keeps metering after them', async () => {
    const js = nc.jetstream();
    await js.publish(main.subject, new Uint8Array([0x0a, 0xff, 0xff, 0xff]));
    main.publisher.publish(usageEvent({ model_id: 'no-such-model' }));
    main.publisher.publish(usageEvent({ key_id: '' }));
    const after = usageEvent({ key_id: `key_${run}after-poison` });
    main.publisher.publish(after);
    await eventually(() => isMetered(redis, main.stream, after.key_id!, after.event_id!), 'the event after the poison to be metered');
    await eventually(async () => (await counterValue(main.registry, 'gateway_metering_poison_messages_total')) === 3, 'three poison messages to be counted');
    expect(await counterValue(main.registry, 'gateway_metering_poison_messages_total', { reason: 'undecodable' })).toBe(1);
    expect(await counterValue(main.registry, 'gateway_metering_poison_messages_total', { reason: 'unknown_model' })).toBe(1);
    expect(await counterValue(main.registry, 'gateway_metering_poison_messages_total', { reason: 'missing_key_id' })).toBe(1);
    const manager = await nc.jetstreamManager();
    await eventually(async () => {
      const info = (await manager.consumers.list(main.stream).next()).find((consumer) => consumer.name.startsWith('metering-'));
      return info && info.num_pending === 0 && info.num_ack_pending === 0;
    }, 'nothing pending or unacknowledged');
  });

  it('adds up totals per key and per model', async () => {
    const alice = `key_${run}alice`;
    const bob = `key_${run}bob`;
    const events = [
      usageEvent({ key_id: alice, model_id: PREMIUM, usage: { prompt_tokens: 100, completion_tokens: 10 } }),
      usageEvent({ key_id: alice, model_id: ECONOMY, usage: { prompt_tokens: 1_000, completion_tokens: 500, cached_tokens: 400 } }),
      usageEvent({ key_id: alice, model_id: ECONOMY, usage: { prompt_tokens: 7, completion_tokens: 3 }, outcome: 'OUTCOME_CANCELLED' }),
      usageEvent({ key_id: bob, model_id: ECONOMY, usage: { prompt_tokens: 50, completion_tokens: 0 }, outcome: 'OUTCOME_FAILED' }),
    ];
    for (const event of events) main.publisher.publish(event);
    await eventually(
      async () => (await Promise.all(events.map((event) => isMetered(redis, main.stream, event.key_id!, event.event_id!)))).every(Boolean),
      'all four events to be metered',
    );

    // Premium: 100 x 2.5 + 10 x 10 = 350 micro-USD.
    // Economy: 600 x 0.15 + 400 x 0.075 + 500 x 0.6 = 420; 7 x 0.15 + 3 x 0.6 = 2.85; 50 x 0.15 = 7.5.
    expect(await keyTotals(redis, alice)).toEqual({
      requests: 3,
      prompt_tokens: 1_107,
      completion_tokens: 513,
      cached_tokens: 400,
      cache_write_tokens: 0,
      cost_pico_usd: 772_850_000n,
      cost_usd: 0.00077285,
      cache_hits: 0,
      saved_cost_pico_usd: 0n,
    });
    expect(await keyTotals(redis, bob)).toEqual({
      requests: 1,
      prompt_tokens: 50,
      completion_tokens: 0,
      cached_tokens: 0,
      cache_write_tokens: 0,
      cost_pico_usd: 7_500_000n,
      cost_usd: 0.0000075,
      cache_hits: 0,
      saved_cost_pico_usd: 0n,
    });
    const economy = await modelTotals(redis, ECONOMY);
    expect(economy).toMatchObject({ requests: 3, prompt_tokens: 1_057, completion_tokens: 503, cached_tokens: 400, cost_pico_usd: 430_350_000n });
    // Kept per key and model in the key's slot; a model's totals are their sum over keys.
    expect(await keyModelTotals(redis, alice, ECONOMY)).toMatchObject({
      requests: 2,
      prompt_tokens: 1_007,
      completion_tokens: 503,
      cached_tokens: 400,
      cost_pico_usd: 422_850_000n,
    });
    expect(await keyModelTotals(redis, alice, PREMIUM)).toMatchObject({ requests: 1, prompt_tokens: 100, completion_tokens: 10, cost_pico_usd: 350_000_000n });
    expect(await keyModelTotals(redis, bob, PREMIUM)).toMatchObject({ requests: 0, cost_pico_usd: 0n });
  });

  it('reads the totals of the earlier layout and does not meter again an event its records remember', async () => {
    // What the layout before this one left: totals without hash tags, one set per stream.
    const id = randomUUID().replaceAll('-', '');
    const keyId = `key_${run}earlier`;
    await inspector.hset(`metering:key:${keyId}`, { requests: 7, prompt_tokens: 70, completion_tokens: 7, cached_tokens: 0, cost_pico_usd: 1_000 });
    await inspector.hset(`metering:model:${PREMIUM}`, { requests: 7, prompt_tokens: 70, completion_tokens: 7, cached_tokens: 0, cost_pico_usd: 1_000 });
    const remembered = usageEvent({ key_id: keyId });
    await inspector.zadd(`metering:dedup:USAGE_TEST_${id}`, 1, remembered.event_id!);
    const upgraded = await startMetering(nc, redis, {}, id);
    streams.push(upgraded.stream);
    try {
      const modelBefore = await modelTotals(redis, PREMIUM);
      const fresh = usageEvent({ key_id: keyId });
      upgraded.publisher.publish(remembered);
      upgraded.publisher.publish(fresh);
      await eventually(() => isMetered(redis, upgraded.stream, keyId, fresh.event_id!), 'the new event to be metered');
      await upgraded.publisher.flush(5_000);
      await eventually(async () => {
        const info = (await (await nc.jetstreamManager()).consumers.list(upgraded.stream).next())[0];
        return info && info.num_pending === 0 && info.num_ack_pending === 0;
      }, 'both events to be handled');
      expect(await isMetered(redis, upgraded.stream, keyId, remembered.event_id!)).toBe(false);
      expect(await keyTotals(redis, keyId)).toMatchObject({ requests: 8, prompt_tokens: 1_270, cost_pico_usd: 1_000n + 6_250_000_000n });
      expect((await modelTotals(redis, PREMIUM)).requests - modelBefore.requests).toBe(1);
    } finally {
      await upgraded.metering.stop();
      upgraded.publisher.close();
      await inspector.del(`metering:model:${PREMIUM}`);
      await inspector.del(`metering:dedup:${upgraded.stream}`);
    }
  });

  it('counts a reported cost that differs from the metered one', async () => {
    const before = await counterValue(main.registry, 'gateway_metering_cost_mismatch_total');
    const keyId = `key_${run}mismatch`;
    const agreeing = usageEvent({ key_id: keyId, reported_cost_pico_usd: 6_250_000_000 });
    const differing = usageEvent({ key_id: keyId, reported_cost_pico_usd: 6_250_000_001 });
    main.publisher.publish(agreeing);
    main.publisher.publish(differing);
    await eventually(async () => (await keyTotals(redis, keyId)).requests === 2, 'both events to be metered');
    expect(await counterValue(main.registry, 'gateway_metering_cost_mismatch_total')).toBe(before + 1);
    // Billed at the catalog's price, not at the reported one.
    expect((await keyTotals(redis, keyId)).cost_pico_usd).toBe(2n * 6_250_000_000n);
  });

  // Through a TCP proxy to one server; a cluster's failover has a drill of its own.
  it.skipIf(parseRedisUrl(process.env.REDIS_URL ?? 'redis://x').cluster)(
    'leaves events unacknowledged while Redis is down and meters them once it is back',
    async () => {
      const target = new URL(await redisUrl());
      const proxy = await startTcpProxy(0, target.hostname, Number(target.port));
      const flakyRedis = createRedis(`redis://127.0.0.1:${proxy.port}`, logger);
      await eventually(() => flakyRedis.status === 'ready', 'redis through the proxy to be ready');
      const flaky = await startMetering(nc, flakyRedis);
      streams.push(flaky.stream);
      try {
        await proxy.close();
        const event = usageEvent({ key_id: `key_${run}outage` });
        flaky.publisher.publish(event);
        await flaky.publisher.flush(5_000);
        const manager = await nc.jetstreamManager();
        await eventually(
          async () => {
            const info = (await manager.consumers.list(flaky.stream).next())[0];
            return info && info.num_redelivered > 0;
          },
          'the event to be handed back for redelivery',
          10_000,
        );
        expect(await isMetered(redis, flaky.stream, event.key_id!, event.event_id!)).toBe(false);

        const reopened = await startTcpProxy(proxy.port, target.hostname, Number(target.port));
        try {
          const totals = await eventually(
            async () => {
              const found = await keyTotals(redis, event.key_id!);
              return found.requests > 0 && found;
            },
            'the event to be metered after Redis returned',
            15_000,
            100,
          );
          expect(totals.cost_pico_usd).toBe(6_250_000_000n);
          expect(totals.requests).toBe(1);
        } finally {
          await flaky.metering.stop();
          flaky.publisher.close();
          flakyRedis.disconnect();
          await reopened.close();
        }
      } finally {
        await proxy.close();
      }
    },
    30_000,
  );

  it('keeps de-duplication records only while an event can come back: pruned below the ack floor, kept above it', async () => {
    const pruning = await startMetering(nc, redis, { dedupRetentionMs: 0, dedupPruneIntervalMs: 100 });
    streams.push(pruning.stream);
    try {
      const keyId = `key_${run}prune`;
      const events = Array.from({ length: 50 }, () => usageEvent({ key_id: keyId }));
      for (const event of events) pruning.publisher.publish(event);
      // A record above the consumer's ack floor (a metered event not yet acknowledged) must survive.
      await inspector.sadd('metering:keys', `key_${run}inflight`);
      await recordEvent(redis, {
        stream: pruning.stream,
        eventId: 'evt-in-flight',
        sequence: 1_000_000_000,
        usage: { key_id: `key_${run}inflight`, model_id: PREMIUM, prompt_tokens: 1, completion_tokens: 1, cached_tokens: 0, cost_pico_usd: 1n },
      });
      await eventually(async () => (await keyTotals(redis, keyId)).requests === 50, 'the fifty events to be metered');
      await eventually(
        async () => (await inspector.zcard(dedupKey(pruning.stream, keyId))) === 0,
        "the acknowledged events' records to be pruned",
        10_000,
        100,
      );
      expect(await isMetered(redis, pruning.stream, `key_${run}inflight`, 'evt-in-flight')).toBe(true);
      // The gauge is set once a prune pass has gone over every key, a moment after the records went.
      await eventually(
        async () => (await counterValue(pruning.registry, 'gateway_metering_dedup_records')) === 1 || undefined,
        'the de-duplication records gauge to count the one record left',
        5_000,
        50,
      );
      // Pruned or not, what was metered stays metered once.
      expect((await keyTotals(redis, keyId)).cost_pico_usd).toBe(50n * 6_250_000_000n);
    } finally {
      await pruning.metering.stop();
      pruning.publisher.close();
      await inspector.del(dedupKey(pruning.stream, `key_${run}inflight`));
    }
  }, 30_000);

  it('meters the events an edge hands over (RecordUsageEvents) once each, whether a copy came or comes through the stream', async () => {
    const port = await main.metering.grpc.listen('127.0.0.1:0');
    const client = createClient(loadGatewayGrpc().gateway.usage.v1.UsageService, `127.0.0.1:${port}`);
    const record = (events: UsageEvent[]) =>
      callUnary<RecordUsageEventsRequest, RecordUsageEventsResponseOutput>(client, client.RecordUsageEvents, { events }, { deadlineMs: 5_000 });
    try {
      const keyId = `key_${run}handover`;
      const viaStream = usageEvent({ key_id: keyId });
      const handedOnly = usageEvent({ key_id: keyId });
      const handedFirst = usageEvent({ key_id: keyId });
      // One event reached the stream and was metered before the outage (its acknowledgement lost).
      main.publisher.publish(viaStream);
      await eventually(async () => (await keyTotals(redis, keyId)).requests === 1, 'the streamed event to be metered');

      // At shutdown the edge hands over all three it still holds, one of them twice (a call sent again).
      const poisonBefore = await counterValue(main.registry, 'gateway_metering_poison_messages_total', { reason: 'unknown_model' });
      const answer = await record([viaStream, handedOnly, handedFirst, handedOnly, usageEvent({ key_id: keyId, model_id: 'no-such-model' })]);
      expect(answer).toEqual({ metered: 2, duplicates: 2, poison: 1 });
      expect(await counterValue(main.registry, 'gateway_metering_poison_messages_total', { reason: 'unknown_model' })).toBe(poisonBefore + 1);
      expect((await keyTotals(redis, keyId)).requests).toBe(3);

      // NATS back: a copy the stream had stored anyway is consumed later and recognised.
      main.publisher.publish(handedFirst);
      await main.publisher.flush(5_000);
      await eventually(
        async () => (await counterValue(main.registry, 'gateway_metering_events_total', { result: 'duplicate' })) >= 1 || undefined,
        'the stream copy to be consumed as a duplicate',
        10_000,
      );
      expect((await keyTotals(redis, keyId)).requests).toBe(3);
      expect((await record([handedOnly, handedFirst, viaStream])).duplicates).toBe(3);
      expect((await keyTotals(redis, keyId)).requests).toBe(3);

      // More than a call may carry: refused whole, with its reason.
      const tooMany = Array.from({ length: 1_001 }, () => usageEvent({ key_id: keyId }));
      const refused = await record(tooMany).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(GatewayError);
      expect((refused as GatewayError).reason).toBe('invalid_request');
      expect((await keyTotals(redis, keyId)).requests).toBe(3);
    } finally {
      client.close();
      await main.metering.grpc.shutdown(1_000);
    }
  });
});
