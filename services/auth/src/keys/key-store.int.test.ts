import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { keysMatching } from '@gateway/redis';
import { hashSecret } from '../shared/ids.js';
import { generateKeyId, generateSecret } from './key-secret.js';
import { KeyStore } from './key-store.js';
import { loadPlans } from '../quota/plans.js';
import { QuotaLimiter } from '../quota/quota-limiter.js';
import { usePrefixedRedis } from '../testing/prefixed-redis.js';

const plans = loadPlans();
const scope = usePrefixedRedis();
const { prefix } = scope;

/** Writes a key as the earlier layout kept it: the whole record under its secret's hash. */
async function earlierKey(plan: string, fields: Record<string, string> = {}) {
  const secret = generateSecret();
  const hash = hashSecret(secret);
  const keyId = generateKeyId();
  await scope.redis.hset(`${prefix}key:${hash}`, { key_id: keyId, plan, name: 'from before', created_at_ms: '1700000000000', revoked: '0', ...fields });
  await scope.redis.set(`${prefix}key-id:${keyId}`, hash);
  await scope.redis.sadd(`${prefix}key-ids`, keyId);
  return { secret, hash, keyId };
}

describe('key layout', () => {
  it("keeps everything one request touches in the key id's hash slot", async () => {
    const keys = new KeyStore(scope.redis, { prefix });
    const limiter = new QuotaLimiter(scope.redis, plans, { prefix, keys });
    const { key, secret } = await keys.create({ plan: 'starter' });
    expect(await limiter.check(hashSecret(secret), randomUUID(), 10, 'reserve')).toMatchObject({ kind: 'allow' });
    const names = (await keysMatching(scope.redis, `${prefix}*`)).filter((name) => name.includes(key.key_id));
    expect(names.sort()).toEqual(
      [`${prefix}record:{${key.key_id}}`, ...['charges', 'requests', 'tokens'].map((part) => `${prefix}window:{${key.key_id}}:${part}`)].sort(),
    );
    // The secret's index names the key id only; it is written once and never changes.
    expect(await scope.redis.hgetall(`${prefix}key:${hashSecret(secret)}`)).toEqual({ key_id: key.key_id });
  });

  it('costs one script call per decision once a replica has seen the key, and still sees a revocation at once', async () => {
    const keys = new KeyStore(scope.redis, { prefix });
    const { key, secret } = await keys.create({ plan: 'pro' });
    // A replica that did not create the key: the first decision reads the index, the next do not.
    const replica = new QuotaLimiter(scope.redis, plans, { prefix, keys: new KeyStore(scope.redis, { prefix }) });
    const sent = vi.spyOn(scope.redis, 'sendCommand');
    try {
      await replica.check(hashSecret(secret), randomUUID(), 1, 'reserve');
      // One script call (EVALSHA; EVAL the first time a node meets the script).
      expect(sent.mock.calls.map(([command]) => (command as { name: string }).name)).toEqual(['hmget', expect.stringMatching(/^eval/)]);
      sent.mockClear();
      await replica.check(hashSecret(secret), randomUUID(), 1, 'reserve');
      expect(sent.mock.calls.map(([command]) => (command as { name: string }).name)).toEqual([expect.stringMatching(/^eval/)]);
    } finally {
      sent.mockRestore();
    }
    await keys.revoke(key.key_id);
    expect(await replica.check(hashSecret(secret), randomUUID(), 1, 'reserve')).toEqual({ kind: 'revoked', keyId: key.key_id });
    // An unknown secret is never cached as known.
    expect(await replica.check(hashSecret(generateSecret()), randomUUID(), 1, 'reserve')).toEqual({ kind: 'unknown_key' });
  });

  it('moves keys of the earlier layout, with their limits, plan and revocation, and they keep working', async () => {
    const live = await earlierKey('starter', { requests_per_minute_override: '2', routing_policy: 'cheap', last_used_at_ms: '1700000000001' });
    const revoked = await earlierKey('pro', { revoked: '1' });
    const keys = new KeyStore(scope.redis, { prefix });
    expect(await keys.migrateEarlierLayout()).toBe(2);
    expect(await keys.migrateEarlierLayout()).toBe(0);
    expect(await keys.get(live.keyId)).toMatchObject({
      key_id: live.keyId,
      plan: 'starter',
      name: 'from before',
      requests_per_minute_override: 2,
      routing_policy: 'cheap',
      last_used_at_ms: 1700000000001,
      revoked: false,
    });
    expect(await scope.redis.hgetall(`${prefix}key:${live.hash}`)).toEqual({ key_id: live.keyId });
    expect(await scope.redis.exists(`${prefix}key-id:${live.keyId}`)).toBe(0);
    expect((await keys.list()).map((key) => key.key_id)).toEqual(expect.arrayContaining([live.keyId, revoked.keyId]));

    const limiter = new QuotaLimiter(scope.redis, plans, { prefix, keys });
    expect(await limiter.check(live.hash, 'a', 1, 'reserve')).toMatchObject({ kind: 'allow', routingPolicy: 'cheap', requests: { limit: 2 } });
    expect(await limiter.check(live.hash, 'b', 1, 'reserve')).toMatchObject({ kind: 'allow' });
    expect(await limiter.check(live.hash, 'c', 1, 'reserve')).toMatchObject({ kind: 'deny_requests' });
    expect(await limiter.check(revoked.hash, 'a', 1, 'reserve')).toEqual({ kind: 'revoked', keyId: revoked.keyId });
    expect((await keys.findBySecret(live.secret))?.key.key_id).toBe(live.keyId);
  });

  it('moves a key of the earlier layout when a request meets it before the migration has', async () => {
    const early = await earlierKey('starter');
    const limiter = new QuotaLimiter(scope.redis, plans, { prefix });
    expect(await limiter.check(early.hash, 'a', 1, 'reserve')).toMatchObject({ kind: 'allow', keyId: early.keyId, plan: 'starter' });
    expect(await scope.redis.hgetall(`${prefix}key:${early.hash}`)).toEqual({ key_id: early.keyId });
    // A change through the store reaches the moved record.
    await new KeyStore(scope.redis, { prefix }).revoke(early.keyId);
    expect(await limiter.check(early.hash, 'b', 1, 'reserve')).toEqual({ kind: 'revoked', keyId: early.keyId });
  });

  it('refuses a second key with the same secret and leaves no record behind, even when two replicas race', async () => {
    const keys = new KeyStore(scope.redis, { prefix });
    const secret = generateSecret();
    const { key } = await keys.create({ plan: 'starter', secret });
    const records = async () => (await keysMatching(scope.redis, `${prefix}record:*`)).length;
    const before = await records();
    await expect(new KeyStore(scope.redis, { prefix }).create({ plan: 'pro', secret })).rejects.toThrow('already exists');
    // A replica that looked the secret up just before the first one claimed it.
    const racing = new KeyStore(scope.redis, { prefix });
    vi.spyOn(racing, 'keyIdOf').mockResolvedValue(undefined);
    await expect(racing.create({ plan: 'pro', secret })).rejects.toThrow('already exists');
    expect(await records()).toBe(before);
    expect((await keys.findBySecret(secret))?.key).toMatchObject({ key_id: key.key_id, plan: 'starter' });
  });
});
