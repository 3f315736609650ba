import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { keysMatching } from '@gateway/redis';
import { spendDayField, spendKeyName, spendMonthField } from '@gateway/keyspace';
import { hashSecret } from '../shared/ids.js';
import { KeyStore } from '../keys/key-store.js';
import { loadPlans, parsePlans } from './plans.js';
import { QuotaLimiter, RedisFullError, WINDOW_MS, type QuotaDecision } from './quota-limiter.js';
import { usePrefixedRedis } from '../testing/prefixed-redis.js';

const plans = loadPlans();
const scope = usePrefixedRedis();
const { prefix } = scope;
let keys: KeyStore;
let now = 1_700_000_000_000;
const clock = () => now;

beforeAll(() => {
  keys = new KeyStore(scope.redis, { prefix });
});

/** A new key and a limiter on a fake clock; `replica` uses a second connection, like a second auth process. */
async function newKey(plan: 'starter' | 'pro' | 'enterprise', overrides: Omit<Parameters<KeyStore['create']>[0], 'plan'> = {}, table = plans) {
  const { key, secret } = await keys.create({ plan, ...overrides });
  const limiter = new QuotaLimiter(scope.redis, table, { prefix, now: clock });
  const replica = new QuotaLimiter(scope.other, table, { prefix, now: clock });
  const name = hashSecret(secret);
  return {
    key,
    check: (tokens: number, id: string = randomUUID(), on = limiter) => on.check(name, id, tokens, 'reserve'),
    peek: () => limiter.check(name, randomUUID(), 0, 'peek'),
    replica,
    limiter,
  };
}

function allowed(decision: QuotaDecision) {
  if (decision.kind !== 'allow') throw new Error(`expected allow, got ${decision.kind}`);
  return decision;
}

describe('the sliding one-minute window', () => {
  it("allows exactly the plan's requests under concurrency from two replicas", async () => {
    const key = await newKey('starter');
    const decisions = await Promise.all(Array.from({ length: 200 }, (_, index) => key.check(10, randomUUID(), index % 2 ? key.limiter : key.replica)));
    expect(decisions.filter((decision) => decision.kind === 'allow')).toHaveLength(60);
    expect(decisions.filter((decision) => decision.kind === 'deny_requests')).toHaveLength(140);
  });

  it('frees a request slot exactly one minute after it was used, and says so in retry-after', async () => {
    const key = await newKey('starter');
    const first = now;
    allowed(await key.check(1));
    now += 10_000;
    for (let index = 0; index < 59; index += 1) allowed(await key.check(1));
    now += 5_000;
    const denied = await key.check(1);
    expect(denied).toMatchObject({ kind: 'deny_requests', retryAfterMs: first + WINDOW_MS - now, requests: { limit: 60, used: 60 } });
    now = first + WINDOW_MS - 1;
    expect((await key.check(1)).kind).toBe('deny_requests');
    now = first + WINDOW_MS;
    const after = allowed(await key.check(1));
    expect(after.requests.used).toBe(60);
    // The other 59 are 10 s younger: the next slot opens then.
    const next = await key.check(1);
    expect(next).toMatchObject({ kind: 'deny_requests', retryAfterMs: 10_000 });
  });

  it('reports remaining and the time until the window is empty', async () => {
    const key = await newKey('pro');
    const decision = allowed(await key.check(500));
    expect(decision.requests).toEqual({ limit: 1_000, used: 1, resetMs: WINDOW_MS });
    expect(decision.tokens).toEqual({ limit: 2_000_000, used: 500, resetMs: WINDOW_MS });
    now += 15_000;
    expect(await key.peek()).toMatchObject({ kind: 'allow', requests: { used: 1, resetMs: 45_000 }, tokens: { used: 500 }, reservationId: '' });
  });
});

describe('tokens', () => {
  it('denies over the tokens per minute with the time until enough tokens have left the window', async () => {
    const key = await newKey('starter');
    const first = now;
    allowed(await key.check(60_000));
    now += 20_000;
    allowed(await key.check(30_000));
    now += 1_000;
    // 90k used: 20k more needs the first reservation to leave the window.
    expect(await key.check(20_000)).toMatchObject({ kind: 'deny_tokens', retryAfterMs: first + WINDOW_MS - now, tokens: { used: 90_000 } });
    // 10k fits.
    allowed(await key.check(10_000));
  });

  it("refuses a request larger than the whole minute's tokens without charging anything", async () => {
    const key = await newKey('starter');
    const decision = await key.check(100_001);
    expect(decision).toMatchObject({ kind: 'too_large', reservationId: '', tokens: { limit: 100_000, used: 0 }, requests: { used: 0 } });
    allowed(await key.check(100_000));
  });

  it('settles to the actual usage, refunding the difference, exactly once', async () => {
    const key = await newKey('starter');
    const reservation = allowed(await key.check(90_000)).reservationId;
    expect(reservation).toMatch(new RegExp(`^${key.key.key_id}:`));
    expect((await key.check(20_000)).kind).toBe('deny_tokens');
    const settled = await key.limiter.settle(reservation, 1_200);
    expect(settled).toEqual({ outcome: 'settled', deltaTokens: -88_800, tokensInWindow: 1_200 });
    expect(await key.replica.settle(reservation, 1_200)).toEqual({ outcome: 'already_settled', deltaTokens: 0, tokensInWindow: 1_200 });
    expect(await key.limiter.settle(reservation, 50)).toMatchObject({ outcome: 'already_settled', tokensInWindow: 1_200 });
    expect(allowed(await key.check(20_000)).tokens.used).toBe(21_200);
  });

  it('charges an excess over the reservation', async () => {
    const key = await newKey('starter');
    const reservation = allowed(await key.check(1_000)).reservationId;
    expect(await key.limiter.settle(reservation, 1_500)).toEqual({ outcome: 'settled', deltaTokens: 500, tokensInWindow: 1_500 });
  });

  it('settles a reservation that has left the window: an excess is charged then, once', async () => {
    const key = await newKey('starter');
    const reservation = allowed(await key.check(1_000)).reservationId;
    now += WINDOW_MS + 5_000;
    expect(await key.limiter.settle(reservation, 1_600)).toEqual({ outcome: 'settled', deltaTokens: 600, tokensInWindow: 600 });
    expect(await key.limiter.settle(reservation, 1_600)).toMatchObject({ outcome: 'already_settled', tokensInWindow: 600 });
    now += WINDOW_MS;
    expect(await key.limiter.settle(reservation, 1_600)).toEqual({ outcome: 'unknown_reservation', deltaTokens: 0, tokensInWindow: 0 });
  });

  it('never reserves twice for the same reservation id', async () => {
    const key = await newKey('starter');
    const id = randomUUID();
    const first = allowed(await key.check(5_000, id));
    const again = allowed(await key.check(5_000, id, key.replica));
    expect(again.reservationId).toBe(first.reservationId);
    expect(again.tokens.used).toBe(5_000);
    expect(again.requests.used).toBe(1);
  });

  it('refuses a malformed reservation id and ignores an unknown one', async () => {
    const key = await newKey('starter');
    await expect(key.limiter.settle('nonsense', 1)).rejects.toThrow(/reservation id/);
    expect(await key.limiter.settle(`${key.key.key_id}:${randomUUID()}`, 1)).toMatchObject({ outcome: 'unknown_reservation' });
  });
});

describe('plans and keys', () => {
  it('never limits or tracks an enterprise key', async () => {
    const key = await newKey('enterprise');
    for (let index = 0; index < 300; index += 1) {
      expect(await key.check(10_000_000)).toMatchObject({ kind: 'allow', reservationId: '', requests: { limit: -1 }, tokens: { limit: -1 } });
    }
    expect(await keysMatching(scope.redis, `${prefix}window:{${key.key.key_id}}*`)).toEqual([]);
  });

  it('applies per-key overrides over the plan', async () => {
    const key = await newKey('pro', { requests_per_minute_override: 2, tokens_per_minute_override: 'unlimited' });
    allowed(await key.check(50_000_000));
    allowed(await key.check(1));
    expect(await key.check(1)).toMatchObject({ kind: 'deny_requests', requests: { limit: 2 }, tokens: { limit: -1 } });
  });

  it("answers the plan's catalog fallbacks default, or the key's override, limited or not", async () => {
    expect(allowed(await (await newKey('starter')).check(1)).catalogFallbacks).toBe(false);
    expect(allowed(await (await newKey('enterprise')).check(1)).catalogFallbacks).toBe(true);
    expect(allowed(await (await newKey('pro', { catalog_fallbacks_override: true })).check(1)).catalogFallbacks).toBe(true);
    expect(allowed(await (await newKey('enterprise', { catalog_fallbacks_override: false })).check(1)).catalogFallbacks).toBe(false);
    const key = await newKey('starter', { catalog_fallbacks_override: true });
    expect(await key.peek()).toMatchObject({ kind: 'allow', catalogFallbacks: true });
    await keys.update(key.key.key_id, { catalog_fallbacks_override: null });
    expect(await key.peek()).toMatchObject({ kind: 'allow', catalogFallbacks: false });
  });

  it('applies a plan change and a revocation at the next decision', async () => {
    const key = await newKey('starter');
    for (let index = 0; index < 60; index += 1) allowed(await key.check(1));
    expect((await key.check(1)).kind).toBe('deny_requests');
    await keys.setPlan(key.key.key_id, 'pro');
    expect(allowed(await key.check(1, randomUUID(), key.replica)).requests).toMatchObject({ limit: 1_000, used: 61 });
    await keys.update(key.key.key_id, { requests_per_minute_override: 61 });
    expect((await key.check(1)).kind).toBe('deny_requests');
    await keys.revoke(key.key.key_id);
    expect(await key.check(1, randomUUID(), key.replica)).toEqual({ kind: 'revoked', keyId: key.key.key_id });
  });

  it("applies a reloaded plans file at the next decision: the starter plan's requests per minute lowered", async () => {
    const source = { current: plans };
    const { key, secret } = await keys.create({ plan: 'starter' });
    const limiter = new QuotaLimiter(scope.redis, source, { prefix, now: clock });
    const check = () => limiter.check(hashSecret(secret), randomUUID(), 1, 'reserve');
    for (let index = 0; index < 5; index += 1) expect(allowed(await check()).requests).toMatchObject({ limit: 60, used: index + 1 });
    source.current = parsePlans(
      'starter: { requests_per_minute: 5, tokens_per_minute: 40000 }\npro: { requests_per_minute: 1000, tokens_per_minute: 1000000 }\nenterprise: { requests_per_minute: unlimited, tokens_per_minute: unlimited }\n',
      'reloaded.yaml',
    );
    expect(await check()).toMatchObject({ kind: 'deny_requests', keyId: key.key_id, requests: { limit: 5, used: 5 } });
    source.current = plans;
    expect(allowed(await check()).requests).toMatchObject({ limit: 60, used: 6 });
  });

  it('knows a key created on another replica at its next decision: no negative cache', async () => {
    const limiter = new QuotaLimiter(scope.redis, plans, { prefix, now: clock });
    const elsewhere = new KeyStore(scope.other, { prefix });
    const secret = `br-${randomUUID().replaceAll('-', '').slice(0, 32)}abcdefgh`;
    expect(await limiter.check(hashSecret(secret), randomUUID(), 1, 'reserve')).toEqual({ kind: 'unknown_key' });
    const { key } = await elsewhere.create({ plan: 'pro', secret });
    expect(allowed(await limiter.check(hashSecret(secret), randomUUID(), 1, 'reserve')).keyId).toBe(key.key_id);
  });

  it('does not know a key that does not exist', async () => {
    const limiter = new QuotaLimiter(scope.redis, plans, { prefix, now: clock });
    expect(await limiter.check(hashSecret(`br-${'x'.repeat(40)}`), randomUUID(), 1, 'reserve')).toEqual({ kind: 'unknown_key' });
  });
});

/** Adds spend to a key as metering does in the step that meters an event (the shared spend hash). */
async function spend(keyId: string, atMs: number, picoUsd: bigint): Promise<void> {
  await scope.redis.hincrby(spendKeyName(keyId), spendDayField(atMs), picoUsd.toString());
  await scope.redis.hincrby(spendKeyName(keyId), spendMonthField(atMs), picoUsd.toString());
}

describe('budgets', () => {
  const DAY = 86_400_000;

  it("allows requests while the day's spend is below the daily budget, then refuses until 00:00 UTC", async () => {
    now = Date.UTC(2026, 10, 24, 22, 0, 0);
    const key = await newKey('pro', { daily_budget_override: 10 });
    expect(allowed(await key.check(1)).budget).toEqual({
      limited: true,
      remainingPicoUsd: 10_000_000,
      spentTodayPicoUsd: 0,
      spentMonthPicoUsd: 0,
      monthlyExhausted: false,
    });
    await spend(key.key.key_id, now - DAY, 50_000_000n); // yesterday's spend does not count today
    await spend(key.key.key_id, now, 9_999_999n);
    expect(allowed(await key.check(1)).budget.remainingPicoUsd).toBe(1);
    await spend(key.key.key_id, now, 1n);
    const refused = await key.check(1);
    expect(refused).toMatchObject({
      kind: 'over_budget',
      retryAfterMs: 2 * 3_600_000,
      budget: { limited: true, remainingPicoUsd: 0, spentTodayPicoUsd: 10_000_000, monthlyExhausted: false },
    });
    // A refusal over budget counts no request against the per-minute limits.
    const peeked = await key.peek();
    expect(peeked).toMatchObject({ kind: 'allow', requests: { used: 2 } });
    now = Date.UTC(2026, 10, 25, 0, 0, 0);
    expect(allowed(await key.check(1)).budget).toMatchObject({ remainingPicoUsd: 10_000_000, spentTodayPicoUsd: 0 });
  });

  it('refuses over the monthly budget with no time to wait, and applies the smaller remainder', async () => {
    now = Date.UTC(2026, 10, 30, 23, 0, 0);
    const key = await newKey('starter', { daily_budget_override: 100, monthly_budget_override: 30 });
    await spend(key.key.key_id, Date.UTC(2026, 10, 2), 25_000_000n);
    await spend(key.key.key_id, Date.UTC(2026, 9, 31), 99_000_000n); // last month
    expect(allowed(await key.check(1)).budget).toMatchObject({ remainingPicoUsd: 5_000_000, spentTodayPicoUsd: 0, spentMonthPicoUsd: 25_000_000 });
    await spend(key.key.key_id, now, 5_000_000n);
    expect(await key.check(1)).toMatchObject({ kind: 'over_budget', retryAfterMs: 0, budget: { monthlyExhausted: true, spentMonthPicoUsd: 30_000_000 } });
    now = Date.UTC(2026, 11, 1, 0, 0, 0);
    expect(allowed(await key.check(1)).budget).toMatchObject({ remainingPicoUsd: 30_000_000, spentMonthPicoUsd: 0 });
  });

  it("takes the plan's budgets, which a key's override replaces or lifts", async () => {
    now = Date.UTC(2026, 5, 1, 12);
    const table = parsePlans(
      [
        'starter: { requests_per_minute: 60, tokens_per_minute: 100000, daily_budget_usd: 0.000002 }',
        'pro: { requests_per_minute: 1000, tokens_per_minute: 2000000 }',
        'enterprise: { requests_per_minute: unlimited, tokens_per_minute: unlimited, monthly_budget_usd: 0.000003 }',
      ].join('\n'),
      'inline.yaml',
    );
    const starter = await newKey('starter', {}, table);
    const lifted = await newKey('starter', { daily_budget_override: 'unlimited' }, table);
    const enterprise = await newKey('enterprise', {}, table);
    for (const key of [starter, lifted, enterprise]) await spend(key.key.key_id, now, 2_000_000n);
    expect(await starter.check(1)).toMatchObject({ kind: 'over_budget' });
    expect(allowed(await lifted.check(1)).budget).toEqual({
      limited: false,
      remainingPicoUsd: 0,
      spentTodayPicoUsd: 0,
      spentMonthPicoUsd: 0,
      monthlyExhausted: false,
    });
    // An enterprise key has no per-minute limits, and still a budget.
    expect(allowed(await enterprise.check(1))).toMatchObject({ reservationId: '', budget: { remainingPicoUsd: 1_000_000 } });
    await spend(enterprise.key.key_id, now, 1_000_000n);
    expect(await enterprise.check(1)).toMatchObject({ kind: 'over_budget', retryAfterMs: 0 });
  });

  it('finds the same UTC month in the script as in TypeScript, at every month edge and leap day', async () => {
    const key = await newKey('pro', { monthly_budget_override: 1_000 });
    const instants = [
      Date.UTC(2024, 1, 29, 23, 59, 59, 999),
      Date.UTC(2024, 2, 1),
      Date.UTC(2023, 11, 31, 23, 59, 59, 999),
      Date.UTC(2024, 0, 1),
      Date.UTC(2000, 1, 29, 12),
      Date.UTC(2100, 1, 28, 23, 59),
      Date.UTC(2100, 2, 1),
      Date.UTC(1970, 0, 1),
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
    ];
    for (const [index, instant] of instants.entries()) {
      await spend(key.key.key_id, instant, BigInt(index + 1));
      now = instant;
      const decision = allowed(await key.check(1));
      expect({ instant: new Date(instant).toISOString(), month: decision.budget.spentMonthPicoUsd, day: decision.budget.spentTodayPicoUsd }).toEqual({
        instant: new Date(instant).toISOString(),
        month: index + 1,
        day: index + 1,
      });
      await scope.redis.del(spendKeyName(key.key.key_id));
    }
  });
});

describe('a shorter window (AUTH_QUOTA_WINDOW_SECONDS)', () => {
  it("counts the plan's requests over the configured length, and records it for metering's settlement", async () => {
    const { key, secret } = await keys.create({ plan: 'starter' });
    const limiter = new QuotaLimiter(scope.redis, plans, { prefix, now: clock, windowMs: 2_000 });
    const check = () => limiter.check(hashSecret(secret), randomUUID(), 1, 'reserve');
    const first = now;
    for (let index = 0; index < 60; index += 1) allowed(await check());
    now += 500;
    expect(await check()).toMatchObject({ kind: 'deny_requests', retryAfterMs: 1_500, requests: { limit: 60, used: 60, resetMs: 1_500 } });
    expect(await scope.redis.hget(`${prefix}window:{${key.key_id}}:charges`, 'window_ms')).toBe('2000');
    now = first + 2_000;
    expect(allowed(await check()).requests.used).toBe(1);
  });
});

describe('a full Redis', () => {
  it("refuses a reservation while the key's master is full, writing nothing, still answers a peek, and reserves again once it has room", async () => {
    const { key, secret } = await keys.create({ plan: 'starter' });
    const other = await keys.create({ plan: 'starter' });
    // The master of this key's record is full; the other key's is not (as on a cluster).
    const fullKeys = new Set([`${prefix}record:{${key.key_id}}`]);
    let full = true;
    const memory = {
      get anyFull() {
        return full;
      },
      isFullFor: (name: string) => full && fullKeys.has(name),
    };
    const limiter = new QuotaLimiter(scope.redis, plans, { prefix, now: clock, memory });
    await expect(limiter.check(hashSecret(secret), randomUUID(), 10, 'reserve')).rejects.toBeInstanceOf(RedisFullError);
    expect(await keysMatching(scope.redis, `${prefix}window:{${key.key_id}}:*`)).toEqual([]);
    expect((await limiter.check(hashSecret(secret), randomUUID(), 0, 'peek')).kind).toBe('allow');
    allowed(await limiter.check(hashSecret(other.secret), randomUUID(), 10, 'reserve'));
    full = false;
    expect(allowed(await limiter.check(hashSecret(secret), randomUUID(), 10, 'reserve')).requests.used).toBe(1);
  });
});
