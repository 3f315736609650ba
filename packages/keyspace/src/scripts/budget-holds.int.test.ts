import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUDGET_HOLD_MAX_AGE_MS } from '../budget-holds.js';
import { authKeys, budgetHoldsKeyName, spendKeyName, teamBudgetHoldsKeyName, teamSpendKeyName } from '../keys.js';
import { spendDayField } from '../spend.js';
import { checkQuota, type CheckQuotaDecision, type CheckQuotaInput, plansArgument } from './check-quota.js';
import { recordUsage } from './record-usage.js';
import { base62, TEST_RETENTION } from '../testing/script-fixtures.js';
import { settleQuota } from './settle-quota.js';

// A budget counts what the requests in flight may still cost, not only what metering recorded:
// the decision holds each admitted request's cost bound, metering's step releases it as it adds
// the cost, SettleUsage releases it for a request that ended without usage, and a hold whose end
// is never reported lapses.

const PICO_PER_MICRO = 1_000_000;
/** Micro-USD budgets, as plans and teams set them. */
const DAILY_MICRO_USD = 100;
const PLANS = plansArgument({
  // Budget only: no window, so the holds alone are what a reservation settles.
  budgeted: { requests: -1, tokens: -1, dailyBudget: DAILY_MICRO_USD, monthlyBudget: -1 },
  limited: { requests: 1_000, tokens: 1_000_000, dailyBudget: DAILY_MICRO_USD, monthlyBudget: -1 },
  free: { requests: -1, tokens: -1, dailyBudget: -1, monthlyBudget: -1 },
});

let redis: RedisClient;
const prefix = `budget-holds-${base62(8)}:`;
const ids: string[] = [];

function newKey(plan: string, teamId?: string): Promise<string> {
  const keyId = `key_${base62(16)}`;
  ids.push(keyId);
  return redis.hset(authKeys(prefix).record(keyId, teamId), { key_id: keyId, plan, ...(teamId && { team_id: teamId }) }).then(() => keyId);
}

async function newTeam(fields: Record<string, string>): Promise<string> {
  const teamId = `team_${base62(16)}`;
  ids.push(teamId);
  await redis.hset(authKeys(prefix).team(teamId), { team_id: teamId, ...fields });
  return teamId;
}

function decide(keyId: string, chargeId: string, boundMicroUsd: number, extra: Partial<CheckQuotaInput> = {}): Promise<CheckQuotaDecision> {
  const input: CheckQuotaInput = {
    keyId,
    prefix,
    chargeId,
    reserveTokens: 10,
    costBoundPicoUsd: BigInt(boundMicroUsd * PICO_PER_MICRO),
    mode: 'reserve',
    windowMs: 60_000,
    lastUsedIntervalMs: 60_000,
    plans: PLANS,
    ...extra,
  };
  return checkQuota(redis, input).then((reply) => {
    if (reply.status === 'unknown_key' || reply.status === 'revoked') throw new Error(`unexpected ${reply.status}`);
    return reply;
  });
}

let sequence = 0;
function meter(keyId: string, chargeId: string, costMicroUsd: number, teamId?: string) {
  sequence += 1;
  return recordUsage(redis, {
    event: {
      stream: `budget-holds-${prefix}`,
      eventId: `evt-${keyId}-${chargeId}`,
      sequence,
      keyId,
      ...(teamId && { teamId }),
      modelId: 'model-a',
      promptTokens: 1,
      completionTokens: 1,
      cachedTokens: 0,
      cacheWriteTokens: 0,
      costPicoUsd: BigInt(costMicroUsd * PICO_PER_MICRO),
      atMs: Date.now(),
      failed: false,
      fellBack: false,
      recent: '',
    },
    settlement: { chargeId, actualTokens: 2, prefix },
    retention: TEST_RETENTION,
  });
}

beforeAll(async () => {
  redis = connectRedis(await redisUrl());
});

afterAll(async () => {
  await deleteMatching(redis, `${prefix}*`);
  for (const id of ids) await deleteMatching(redis, `metering:*{${id}}*`);
  await redis?.quit();
});

describe("a budget's holds", () => {
  it('admits concurrent requests only while their bounds fit beside the ones in flight, and reports what is left net of the others', async () => {
    const keyId = await newKey('budgeted');
    // 100 micro-USD, bounds of 30: three fit, the fourth does not while they are in flight.
    const decisions = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((charge) => decide(keyId, charge, 30)));
    expect(decisions.map((decision) => decision.status).sort()).toEqual(['allow', 'allow', 'allow', 'over_budget', 'over_budget']);
    const refused = decisions.find((decision) => decision.status === 'over_budget')!;
    expect(refused.limitedBy).toBe('key');
    expect(refused.remainingPicoUsd).toBe(10 * PICO_PER_MICRO);
    // Admitted in turn: each saw what the ones before it hold.
    const left = decisions.filter((decision) => decision.status === 'allow').map((decision) => decision.remainingPicoUsd / PICO_PER_MICRO);
    expect(left.sort((a, b) => b - a)).toEqual([100, 70, 40]);
    expect(await redis.hget(spendKeyName(keyId), 'held')).toBe(String(90 * PICO_PER_MICRO));
  });

  it('releases a hold in the step that meters its request, the cost counting as spent instead: nothing counted twice or missed', async () => {
    const keyId = await newKey('budgeted');
    const admitted = await Promise.all(['a', 'b', 'c'].map((charge) => decide(keyId, charge, 30)));
    expect(admitted.every((decision) => decision.status === 'allow')).toBe(true);
    // Request a cost 20 of its 30: 10 freed.
    expect((await meter(keyId, 'a', 20)).outcome).toBe('metered');
    expect(await redis.hget(spendKeyName(keyId), spendDayField(Date.now()))).toBe(String(20 * PICO_PER_MICRO));
    expect(await redis.hget(spendKeyName(keyId), 'held')).toBe(String(60 * PICO_PER_MICRO));
    expect(await redis.zrange(budgetHoldsKeyName(keyId), 0, -1)).toEqual(['b', 'c']);
    // 100 - 20 spent - 60 held = 20: a bound of 20 fits, one of 21 does not.
    expect((await decide(keyId, 'd', 21)).status).toBe('over_budget');
    expect((await decide(keyId, 'e', 20)).status).toBe('allow');
    // The same event again (a redelivery) releases and spends nothing more.
    expect((await meter(keyId, 'a', 20)).outcome).toBe('duplicate');
    expect(await redis.hget(spendKeyName(keyId), 'held')).toBe(String(80 * PICO_PER_MICRO));
    expect(await redis.hget(spendKeyName(keyId), spendDayField(Date.now()))).toBe(String(20 * PICO_PER_MICRO));
  });

  it('releases the hold of a request that ended without usage (SettleUsage), idempotently', async () => {
    const keyId = await newKey('limited');
    expect((await decide(keyId, 'a', 60)).status).toBe('allow');
    expect((await decide(keyId, 'b', 60)).status).toBe('over_budget');
    for (const outcome of ['settled', 'already_settled']) {
      expect((await settleQuota(redis, { reservation: { keyId, chargeId: 'a' }, prefix, actualTokens: 0, windowMs: 60_000 })).outcome).toBe(outcome);
      expect(await redis.hget(spendKeyName(keyId), 'held')).toBe('0');
    }
    expect((await decide(keyId, 'b', 60)).status).toBe('allow');
    // A key with a budget and no window: the release is its settlement.
    const budgetOnly = await newKey('budgeted');
    expect((await decide(budgetOnly, 'a', 60)).status).toBe('allow');
    expect((await settleQuota(redis, { reservation: { keyId: budgetOnly, chargeId: 'a' }, prefix, actualTokens: 0, windowMs: 60_000 })).outcome).toBe(
      'settled',
    );
    expect((await decide(budgetOnly, 'b', 100)).status).toBe('allow');
  });

  it('lets a hold whose end is never reported lapse after BUDGET_HOLD_MAX_AGE_MS', async () => {
    const keyId = await newKey('budgeted');
    const now = Date.now();
    expect((await decide(keyId, 'lost', 90, { nowMs: now })).status).toBe('allow');
    expect((await decide(keyId, 'b', 20, { nowMs: now + BUDGET_HOLD_MAX_AGE_MS - 1 })).status).toBe('over_budget');
    const later = await decide(keyId, 'c', 20, { nowMs: now + BUDGET_HOLD_MAX_AGE_MS });
    expect(later.status).toBe('allow');
    expect(later.remainingPicoUsd).toBe(100 * PICO_PER_MICRO);
    expect(await redis.zrange(budgetHoldsKeyName(keyId), 0, -1)).toEqual(['c']);
  });

  it('admits a request whose bound exceeds what is left only when nothing else is in flight, so a budget is never locked nor overshot by more than one request', async () => {
    const keyId = await newKey('budgeted');
    const decisions = await Promise.all(['a', 'b', 'c'].map((charge) => decide(keyId, charge, 500)));
    expect(decisions.map((decision) => decision.status).sort()).toEqual(['allow', 'over_budget', 'over_budget']);
    const admitted = ['a', 'b', 'c'][decisions.findIndex((decision) => decision.status === 'allow')]!;
    await meter(keyId, admitted, 10);
    // 90 left, nothing in flight: the next one starts though its bound is larger.
    expect((await decide(keyId, 'd', 500)).status).toBe('allow');
  });

  it("holds a member's bound against its team's budget too, under the key's id, and meters both away at once", async () => {
    const teamId = await newTeam({ daily_budget: String(DAILY_MICRO_USD) });
    const [first, second] = [await newKey('free', teamId), await newKey('free', teamId)];
    const decisions = await Promise.all([first, second, first, second].map((keyId, index) => decide(keyId, `r${index}`, 40, { teamId })));
    expect(decisions.map((decision) => decision.status).sort()).toEqual(['allow', 'allow', 'over_budget', 'over_budget']);
    expect(decisions.filter((decision) => decision.status === 'over_budget').every((decision) => decision.limitedBy === 'team')).toBe(true);
    const holds = await redis.zrange(teamBudgetHoldsKeyName(teamId), 0, -1);
    expect(holds).toHaveLength(2);
    // The key has no budget of its own: nothing held there.
    expect(await redis.exists(budgetHoldsKeyName(first, teamId), budgetHoldsKeyName(second, teamId))).toBe(0);
    for (const member of holds) {
      const [keyId, chargeId] = member.split(':') as [string, string];
      expect((await meter(keyId, chargeId, 40, teamId)).outcome).toBe('metered');
    }
    expect(await redis.hget(teamSpendKeyName(teamId), 'held')).toBe('0');
    expect(await redis.hget(teamSpendKeyName(teamId), spendDayField(Date.now()))).toBe(String(80 * PICO_PER_MICRO));
    expect((await decide(first, 'next', 20, { teamId })).status).toBe('allow');
    expect((await decide(second, 'over', 1, { teamId })).status).toBe('over_budget');
  });

  it('holds nothing and writes nothing for a key without a budget', async () => {
    const keyId = await newKey('free');
    expect((await decide(keyId, 'a', 1_000_000)).status).toBe('allow');
    expect(await redis.exists(spendKeyName(keyId), budgetHoldsKeyName(keyId))).toBe(0);
  });
});
