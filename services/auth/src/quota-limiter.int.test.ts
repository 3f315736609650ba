import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, deleteMatching, keysMatching, type RedisClient } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';
import { hashSecret } from './key-secret.js';
import { KeyStore } from './key-store.js';
import { loadPlans } from './plans.js';
import { QuotaLimiter, WINDOW_MS, type QuotaDecision } from './quota-limiter.js';

const plans = loadPlans();
const prefix = `test-${randomUUID()}:auth:`;
let redis: RedisClient;
let other: RedisClient;
let keys: KeyStore;
let now = 1_700_000_000_000;
const clock = () => now;

beforeAll(async () => {
  const url = await redisUrl();
  redis = connectRedis(url);
  other = connectRedis(url);
  keys = new KeyStore(redis, { prefix });
});

afterAll(async () => {
  await deleteMatching(redis, `${prefix}*`);
  await Promise.all([redis.quit(), other.quit()]);
});

/** A new key and a limiter on a fake clock; `replica` uses a second connection, like a second auth process. */
async function newKey(plan: 'starter' | 'pro' | 'enterprise', overrides: { requests_per_minute_override?: number | 'unlimited'; tokens_per_minute_override?: number | 'unlimited'; catalog_fallbacks_override?: boolean } = {}) {
  const { key, secret } = await keys.create({ plan, ...overrides });
  const limiter = new QuotaLimiter(redis, plans, { prefix, now: clock });
  const replica = new QuotaLimiter(other, plans, { prefix, now: clock });
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
  it('allows exactly the plan\'s requests under concurrency from two replicas', async () => {
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

  it('refuses a request larger than the whole minute\'s tokens without charging anything', async () => {
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
    expect(await keysMatching(redis, `${prefix}window:{${key.key.key_id}}*`)).toEqual([]);
  });

  it('applies per-key overrides over the plan', async () => {
    const key = await newKey('pro', { requests_per_minute_override: 2, tokens_per_minute_override: 'unlimited' });
    allowed(await key.check(50_000_000));
    allowed(await key.check(1));
    expect(await key.check(1)).toMatchObject({ kind: 'deny_requests', requests: { limit: 2 }, tokens: { limit: -1 } });
  });

  it('answers the plan\'s catalog fallbacks default, or the key\'s override, limited or not', async () => {
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

  it('does not know a key that does not exist', async () => {
    const limiter = new QuotaLimiter(redis, plans, { prefix, now: clock });
    expect(await limiter.check(hashSecret(`br-${'x'.repeat(40)}`), randomUUID(), 1, 'reserve')).toEqual({ kind: 'unknown_key' });
  });
});
