import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callUnary, GatewayError } from '@gateway/grpc';
import type { ListRecentRequestsResponseOutput, QueryUsageRequest, QueryUsageResponseOutput, UsageServiceClient } from '@gateway/proto';
import { dailyKey, DAY_MS, hourlyKey, spendDayField, spendKeyName, spendMonthField } from '@gateway/keyspace';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';
import { HOURLY_RETENTION_MS, RECENT_REQUESTS_PER_KEY } from './usage-buckets.js';
import { recordEvent, type EventUsage } from './usage-store.js';
import { startUsageService, type TestUsageService } from './testing/usage-service.js';

const HOUR = 3_600_000;
const STREAM = `USAGE_BUCKETS_${randomUUID().slice(0, 8)}`;

/** A key id as auth draws them: `key_` and 16 letters or digits. */
function newKeyId(): string {
  return `key_${randomBytes(12)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, '')
    .padEnd(16, 'x')
    .slice(0, 16)}`;
}

describe('usage buckets', () => {
  let redis: RedisClient;
  let usage: TestUsageService;
  let client: UsageServiceClient;
  const alice = newKeyId();
  const bob = newKeyId();
  const models = [`bucket-a-${randomUUID().slice(0, 6)}`, `bucket-b-${randomUUID().slice(0, 6)}`];
  // Two days ago at 22:00 UTC: the events straddle a midnight.
  const base = Math.floor(Date.now() / DAY_MS) * DAY_MS - 2 * DAY_MS + 22 * HOUR;
  let sequence = 0;

  const record = (keyId: string, modelId: string, atMs: number, usage: Partial<EventUsage> = {}, eventId = `evt-${randomUUID()}`) =>
    recordEvent(redis, {
      stream: STREAM,
      eventId,
      sequence: (sequence += 1),
      usage: {
        key_id: keyId,
        model_id: modelId,
        prompt_tokens: 10,
        completion_tokens: 20,
        cached_tokens: 0,
        cost_pico_usd: 1_000_000n,
        received_at_ms: atMs,
        ...usage,
      },
    });
  const query = (request: QueryUsageRequest) =>
    callUnary<QueryUsageRequest, QueryUsageResponseOutput>(client, client.QueryUsage, request, { deadlineMs: 5_000 });

  beforeAll(async () => {
    redis = connectRedis(await redisUrl());
    usage = await startUsageService(redis);
    client = usage.client;

    // alice: two events of model A in the 22:00 hour, one failed event of A at 23:30, one of B
    // answered by a fallback after midnight with cache reads and writes; the 22:00 event delivered
    // twice.
    const repeated = `evt-${randomUUID()}`;
    expect(await record(alice, models[0]!, base + 5 * 60_000, {}, repeated)).toBe(true);
    expect(await record(alice, models[0]!, base + 6 * 60_000, {}, repeated)).toBe(false);
    await record(alice, models[0]!, base + 59 * 60_000 + 59_999, { prompt_tokens: 7, completion_tokens: 0, cost_pico_usd: 3n });
    await record(alice, models[0]!, base + 90 * 60_000, { prompt_tokens: 0, completion_tokens: 0, cost_pico_usd: 0n, failed: true });
    await record(alice, models[1]!, base + 2 * HOUR + 1, {
      prompt_tokens: 100,
      completion_tokens: 50,
      cached_tokens: 40,
      cache_write_tokens: 30,
      cost_pico_usd: 123_456_789_012n,
      fell_back: true,
    });
    // bob: one event of B on the same day as alice's first.
    await record(bob, models[1]!, base + HOUR / 2, { prompt_tokens: 1, completion_tokens: 1, cost_pico_usd: 5n });
  });

  afterAll(async () => {
    await usage.stop();
    for (const keyId of [alice, bob]) await deleteMatching(redis, `metering:*{${keyId}}*`);
    await redis.quit();
  });

  const seconds = (ms: number) => Math.floor(ms / 1000);
  const counts = (requests: number, prompt: number, completion: number, cached: number, cost: string, errors = 0, fallbacks = 0, cacheWrite = 0) => ({
    requests,
    prompt_tokens: prompt,
    completion_tokens: completion,
    cached_tokens: cached,
    cache_write_tokens: cacheWrite,
    cost_pico_usd: cost,
    errors,
    fallbacks,
    cache_hits: 0,
    saved_cost_pico_usd: '0',
  });

  it('counts every event once in its UTC hour, per key and model, errors, fallbacks and cache writes included', async () => {
    const { rows } = await query({ start: seconds(base - DAY_MS), end: seconds(base + DAY_MS), bucket: 'BUCKET_WIDTH_HOUR', key_ids: [alice, bob] });
    const shown = rows.map((row) => ({ start: Number(row.start), key: row.key_id, model: row.model_id, counts: { ...row.counts } }));
    // Counts that are zero are absent on the wire (proto3); fill them for the comparison.
    for (const row of shown) row.counts = { ...counts(0, 0, 0, 0, '0'), ...row.counts, requests: Number(row.counts.requests) };
    expect(shown).toEqual(
      [
        { start: seconds(base), key: alice, model: models[0], counts: counts(2, 17, 20, 0, '1000003') },
        { start: seconds(base), key: bob, model: models[1], counts: counts(1, 1, 1, 0, '5') },
        { start: seconds(base + HOUR), key: alice, model: models[0], counts: counts(1, 0, 0, 0, '0', 1) },
        { start: seconds(base + 2 * HOUR), key: alice, model: models[1], counts: counts(1, 100, 50, 40, '123456789012', 0, 1, 30) },
      ].sort((a, b) => a.start - b.start || a.key.localeCompare(b.key) || a.model!.localeCompare(b.model!)),
    );
  });

  it('counts response-cache hits and the cost they saved in the buckets, beside the requests and cost of the hour', async () => {
    const grace = newKeyId();
    try {
      await record(grace, models[0]!, base + 10 * 60_000, {
        prompt_tokens: 0,
        completion_tokens: 0,
        cost_pico_usd: 0n,
        cache_hit: true,
        saved_cost_pico_usd: 1_000_000n,
      });
      await record(grace, models[0]!, base + 20 * 60_000, {
        prompt_tokens: 0,
        completion_tokens: 0,
        cost_pico_usd: 5n,
        cache_hit: true,
        saved_cost_pico_usd: 50n,
      });
      await record(grace, models[0]!, base + 30 * 60_000);
      const { rows } = await query({ start: seconds(base), end: seconds(base + HOUR), bucket: 'BUCKET_WIDTH_HOUR', key_ids: [grace] });
      expect(rows.map((row) => ({ ...row.counts, requests: Number(row.counts?.requests), cache_hits: Number(row.counts?.cache_hits) }))).toEqual([
        { ...counts(3, 10, 20, 0, '1000005'), cache_hits: 2, saved_cost_pico_usd: '1000050' },
      ]);
    } finally {
      await deleteMatching(redis, `metering:*{${grace}}*`);
    }
  });

  it('counts the same events in UTC days, split at midnight', async () => {
    const { rows } = await query({ start: seconds(base - 3 * DAY_MS), end: seconds(base + 3 * DAY_MS), bucket: 'BUCKET_WIDTH_DAY', key_ids: [alice] });
    const day = Math.floor(base / DAY_MS) * DAY_MS;
    expect(
      rows.map((row) => [
        Number(row.start),
        row.model_id,
        Number(row.counts?.requests ?? 0),
        row.counts?.cost_pico_usd ?? '0',
        Number(row.counts?.errors ?? 0),
        Number(row.counts?.fallbacks ?? 0),
      ]),
    ).toEqual([
      [seconds(day), models[0], 3, '1000003', 1, 0],
      [seconds(day + DAY_MS), models[1], 1, '123456789012', 0, 1],
    ]);
  });

  it('takes the start as inclusive of its bucket and the end as exclusive; an empty range is empty, not an error', async () => {
    const inside = await query({ start: seconds(base + 30 * 60_000), end: seconds(base + HOUR), bucket: 'BUCKET_WIDTH_HOUR', key_ids: [alice] });
    expect(inside.rows.map((row) => Number(row.start))).toEqual([seconds(base)]);
    expect((await query({ start: seconds(base), end: seconds(base), bucket: 'BUCKET_WIDTH_HOUR', key_ids: [alice] })).rows).toEqual([]);
    expect((await query({ start: seconds(base - 10 * DAY_MS), end: seconds(base - 9 * DAY_MS), bucket: 'BUCKET_WIDTH_DAY', key_ids: [alice] })).rows).toEqual(
      [],
    );
    // A key with no usage, and a malformed key id, read nothing.
    expect((await query({ start: 0, end: seconds(Date.now()), bucket: 'BUCKET_WIDTH_DAY', key_ids: [newKeyId(), 'key_../../*'] })).rows).toEqual([]);
  });

  it('reads only the keys asked for', async () => {
    const { rows } = await query({ start: seconds(base - DAY_MS), end: seconds(base + DAY_MS), bucket: 'BUCKET_WIDTH_DAY', key_ids: [bob] });
    expect(rows.map((row) => row.key_id)).toEqual([bob]);
  });

  it('refuses a range that ends before it starts, and a missing bucket width, as invalid arguments', async () => {
    await expect(query({ start: 100, end: 99, bucket: 'BUCKET_WIDTH_DAY' })).rejects.toMatchObject({ code: 3, param: 'end' });
    await expect(query({ start: 0, end: 99 })).rejects.toBeInstanceOf(GatewayError);
  });

  it('keeps hourly buckets 14 days after their day, and drops an event older than that from them only', async () => {
    const day = Math.floor(base / DAY_MS);
    expect(await redis.pexpiretime(hourlyKey(alice, models[0]!, day))).toBe((day + 1) * DAY_MS + HOURLY_RETENTION_MS);
    const old = Date.now() - 20 * DAY_MS;
    const carol = newKeyId();
    try {
      await record(carol, models[0]!, old);
      expect(await redis.exists(hourlyKey(carol, models[0]!, Math.floor(old / DAY_MS)))).toBe(0);
      const month = new Date(old).getUTCFullYear() * 12 + new Date(old).getUTCMonth();
      expect(await redis.hget(dailyKey(carol, models[0]!, month), `${new Date(old).getUTCDate()}:r`)).toBe('1');
    } finally {
      await deleteMatching(redis, `metering:*{${carol}}*`);
    }
  });

  it("adds each event's cost to its key's spend of the day and the month, and forgets days before yesterday", async () => {
    const spend = await redis.hgetall(spendKeyName(alice));
    expect(spend[spendDayField(base)]).toBe('1000003');
    expect(spend[spendDayField(base + 2 * HOUR)]).toBe('123456789012');
    const months = new Set([spendMonthField(base), spendMonthField(base + 2 * HOUR)]);
    expect([...months].reduce((sum, field) => sum + BigInt(spend[field] ?? '0'), 0n)).toBe(123_457_789_015n);
    const dave = newKeyId();
    try {
      await record(dave, models[0]!, Date.now() - 5 * DAY_MS);
      await record(dave, models[0]!, Date.now());
      expect(Object.keys(await redis.hgetall(spendKeyName(dave))).filter((field) => field.startsWith('d:'))).toEqual([spendDayField(Date.now())]);
    } finally {
      await deleteMatching(redis, `metering:*{${dave}}*`);
    }
  });

  it(`lists the latest requests newest first, at most ${RECENT_REQUESTS_PER_KEY} per key`, async () => {
    const erin = newKeyId();
    try {
      for (let index = 0; index < RECENT_REQUESTS_PER_KEY + 5; index += 1) {
        await recordEvent(redis, {
          stream: STREAM,
          eventId: `evt-${randomUUID()}`,
          sequence: (sequence += 1),
          usage: {
            key_id: erin,
            model_id: models[0]!,
            prompt_tokens: 1,
            completion_tokens: 1,
            cached_tokens: 0,
            cost_pico_usd: 1n,
            received_at_ms: base + index,
            recent: JSON.stringify({
              key_id: erin,
              received_at_ms: base + index,
              model_id: models[0],
              outcome: 'OUTCOME_COMPLETED',
              auto: { score: 0.5, tier: 'economy', policy: 'balanced' },
            }),
          },
        });
      }
      const listed = await callUnary<{ limit: number; key_id: string }, ListRecentRequestsResponseOutput>(
        client,
        client.ListRecentRequests,
        { limit: 200, key_id: erin },
        { deadlineMs: 5_000 },
      );
      expect(listed.requests).toHaveLength(RECENT_REQUESTS_PER_KEY);
      expect(listed.requests[0]).toMatchObject({ received_at_ms: base + RECENT_REQUESTS_PER_KEY + 4, auto: { score: 0.5, tier: 'economy' } });
      expect(listed.requests.map((request) => Number(request.received_at_ms))).toEqual(
        [...listed.requests.map((request) => Number(request.received_at_ms))].sort((a, b) => b - a),
      );
    } finally {
      await deleteMatching(redis, `metering:*{${erin}}*`);
    }
  });
});
