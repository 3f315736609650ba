import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costPicoUsd, type Catalog } from '@gateway/catalog';
import { callUnary } from '@gateway/grpc';
import { authKeys, spendDayField, spendKeyName, spendMonthField, teamSpendKeyName, teamTotalsKey } from '@gateway/keyspace';
import { createLogger } from '@gateway/logger';
import type { QueryUsageRequest, QueryUsageResponseOutput, UsageEventOutput, UsageServiceClient } from '@gateway/proto';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';
import { testModel } from './testing/catalog-model.js';
import { startUsageService, type TestUsageService } from './testing/usage-service.js';
import { createUsageMeter } from './usage-meter.js';
import { keyTotals, teamTotals } from './usage-store.js';

const logger = createLogger('team-usage-test', 'silent');
const run = randomUUID().slice(0, 8);
const MODEL = `test-team-${run}`;
const model = testModel(MODEL, { input_micro_usd_per_mtok: 2_000_000, cached_input_micro_usd_per_mtok: 1_000_000, output_micro_usd_per_mtok: 10_000_000 });
const catalog: Catalog = { models: [model], byId: new Map([[MODEL, model]]) };
const prefix = `test-${run}:auth:`;
const STREAM = `TEAM_USAGE_${run}`;

function randomId(kind: 'key' | 'team'): string {
  return `${kind}_${randomBytes(16).toString('hex').slice(0, 16)}`;
}

describe('usage of a team', () => {
  let redis: RedisClient;
  let usage: TestUsageService | undefined;
  let client: UsageServiceClient;
  const team = randomId('team');
  const members = [randomId('key'), randomId('key')];
  const loner = randomId('key');
  const at = Date.now() - 60_000;
  let sequence = 0;
  const meter = () => createUsageMeter({ redis, catalog, logger, stream: STREAM, quotaPrefix: prefix });
  const event = (keyId: string, teamId: string, overrides: Partial<UsageEventOutput> = {}): UsageEventOutput => ({
    event_id: `evt-${randomUUID()}`,
    key_id: keyId,
    team_id: teamId,
    model_id: MODEL,
    usage: { prompt_tokens: 1_000, completion_tokens: 100, total_tokens: 1_100, cached_tokens: 0 },
    received_at_ms: at,
    outcome: 'OUTCOME_COMPLETED',
    fallback_models: [],
    guardrails: [],
    ...overrides,
  });
  const oneEventCost = costPicoUsd(model.pricing, { prompt_tokens: 1_000, completion_tokens: 100, cached_tokens: 0, cache_write_tokens: 0 });

  beforeAll(async () => {
    redis = connectRedis(await redisUrl());
    usage = await startUsageService(redis);
    client = usage.client;
  });

  afterAll(async () => {
    await usage?.stop();
    for (const pattern of [`metering:*{${team}}*`, `metering:*{${loner}}*`, `${prefix}*`]) await deleteMatching(redis, pattern);
    await redis.hdel('metering:key-teams', ...members);
    await redis.srem('metering:keys', ...members, loner);
    await redis.quit();
  });

  it("adds a member's cost to its own spend and its team's, once per event, in the team's slot", async () => {
    const usage = meter();
    const repeated = event(members[0]!, team);
    expect(await usage(repeated, (sequence += 1))).toBe('metered');
    expect(await usage(repeated, (sequence += 1))).toBe('duplicate');
    expect(await usage(event(members[1]!, team), (sequence += 1))).toBe('metered');
    expect(await usage(event(loner, ''), (sequence += 1))).toBe('metered');

    const teamSpend = await redis.hgetall(teamSpendKeyName(team));
    expect(teamSpend[spendDayField(at)]).toBe((2n * oneEventCost).toString());
    expect(teamSpend[spendMonthField(at)]).toBe((2n * oneEventCost).toString());
    expect((await redis.hgetall(spendKeyName(members[0]!, team)))[spendDayField(at)]).toBe(oneEventCost.toString());
    // A key without a team keeps its own layout, and its spend is not the team's.
    expect((await redis.hgetall(spendKeyName(loner)))[spendDayField(at)]).toBe(oneEventCost.toString());
    expect(await redis.hget(teamTotalsKey(team), 'requests')).toBe('2');
    expect((await teamTotals(redis, team)).cost_pico_usd).toBe(2n * oneEventCost);
    expect((await keyTotals(redis, members[1]!)).requests).toBe(1);
  });

  it("settles a member's reservation in its own window and its team's", async () => {
    const names = authKeys(prefix);
    const charge = `c${run}`;
    const windows = [names.window(members[0]!, team), names.teamWindow(team)];
    const ids = [charge, `${members[0]}:${charge}`];
    for (const [index, window] of windows.entries()) {
      await redis.zadd(window.requests, Date.now(), ids[index]!);
      await redis.zadd(window.tokens, Date.now(), ids[index]!);
      await redis.hset(window.charges, `t:${ids[index]}`, 5_000, 'total', 5_000, 'window_ms', 60_000);
    }
    expect(await meter()(event(members[0]!, team, { reservation_id: `${members[0]}:${charge}` }), (sequence += 1))).toBe('metered');
    for (const window of windows) expect(await redis.hget(window.charges, 'total')).toBe('1100');
  });

  it('answers usage filtered by team, each row naming its key and team', async () => {
    const query = (request: QueryUsageRequest) =>
      callUnary<QueryUsageRequest, QueryUsageResponseOutput>(client, client.QueryUsage, request, { deadlineMs: 5_000 });
    const range = { start: Math.floor(at / 1000) - 3_600, end: Math.floor(at / 1000) + 3_600, bucket: 'BUCKET_WIDTH_HOUR' as const };
    const byTeam = await query({ ...range, team_ids: [team] });
    expect(new Set(byTeam.rows.map((row) => row.key_id))).toEqual(new Set(members));
    expect(byTeam.rows.every((row) => row.team_id === team && row.model_id === MODEL)).toBe(true);
    expect(byTeam.rows.reduce((sum, row) => sum + Number(row.counts?.requests ?? 0), 0)).toBe(3);
    const named = await query({ ...range, key_ids: [loner, members[0]!] });
    expect(named.rows.map((row) => [row.key_id, row.team_id]).sort()).toEqual(
      [
        [loner, ''],
        [members[0]!, team],
      ].sort(),
    );
    expect((await query({ ...range, team_ids: [randomId('team')] })).rows).toEqual([]);
  });
});
