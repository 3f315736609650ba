import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOW_LIST_CASES, modelAllowed } from '@gateway/catalog';
import { luaModelAllowed } from '@gateway/keyspace';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';
import { hashSecret } from '../shared/ids.js';
import { KeyInputError } from '../shared/input-error.js';
import { KeyStore } from './key-store.js';
import { loadPlans } from '../quota/plans.js';
import { QuotaLimiter } from '../quota/quota-limiter.js';

const prefix = `test-${randomUUID()}:auth:`;
let redis: RedisClient;
let keys: KeyStore;
let limiter: QuotaLimiter;

beforeAll(async () => {
  redis = connectRedis(await redisUrl());
  keys = new KeyStore(redis, { prefix });
  limiter = new QuotaLimiter(redis, loadPlans(), { prefix, keys });
});

afterAll(async () => {
  await deleteMatching(redis, `${prefix}*`);
  await redis.quit();
});

describe('the allow-list matcher of the quota script', () => {
  it('answers every case of the shared table as the TypeScript matcher does', async () => {
    for (const { lists, model, allowed } of ALLOW_LIST_CASES) {
      expect(modelAllowed(lists, model), `TS: ${JSON.stringify(lists)} ${model}`).toBe(allowed);
      expect(await luaModelAllowed(redis, lists, model), `Lua: ${JSON.stringify(lists)} ${model}`).toBe(allowed);
    }
  });
});

describe('CheckKey with a model', () => {
  /** A key of two requests a minute with the given allow-list; check() decides about a model. */
  async function newKey(allowed?: string[]) {
    const { key, secret } = await keys.create({ plan: 'pro', requests_per_minute_override: 2, ...(allowed && { allowed_models: allowed }) });
    const hash = hashSecret(secret);
    return {
      key,
      check: (model: string, mode: 'reserve' | 'peek' = 'reserve') => limiter.check(hash, randomUUID(), 10, { mode, model }),
    };
  }

  it('refuses a model outside the key’s list before counting or reserving anything', async () => {
    const key = await newKey(['sim-*', 'gpt-4o']);
    for (let index = 0; index < 5; index += 1) {
      expect(await key.check('gpt-4o-mini')).toMatchObject({ kind: 'model_not_allowed', reservationId: '', modelAllowLists: [['sim-*', 'gpt-4o']] });
    }
    // The window is untouched: both requests of the minute are still there.
    expect(await key.check('sim-mini')).toMatchObject({ kind: 'allow', requests: { limit: 2, used: 1 } });
    expect(await key.check('gpt-4o')).toMatchObject({ kind: 'allow', requests: { used: 2 } });
    expect(await key.check('sim-pro')).toMatchObject({ kind: 'deny_requests' });
    expect(await key.check('claude-sonnet-4', 'peek')).toMatchObject({ kind: 'model_not_allowed' });
  });

  it('checks nothing for no model (auto) and returns the list for the caller to choose within', async () => {
    const key = await newKey(['sim-mini']);
    expect(await key.check('')).toMatchObject({ kind: 'allow', modelAllowLists: [['sim-mini']] });
  });

  it('allows every model without a list, none with an empty one, and follows each change at once', async () => {
    const key = await newKey();
    expect(await key.check('anything', 'peek')).toMatchObject({ kind: 'allow', modelAllowLists: [] });
    expect((await keys.update(key.key.key_id, { allowed_models: [] }))?.allowed_models).toEqual([]);
    expect(await key.check('sim-mini', 'peek')).toMatchObject({ kind: 'model_not_allowed', modelAllowLists: [[]] });
    expect((await keys.update(key.key.key_id, { allowed_models: ['sim-mini'] }))?.allowed_models).toEqual(['sim-mini']);
    expect(await key.check('sim-mini', 'peek')).toMatchObject({ kind: 'allow' });
    const cleared = await keys.update(key.key.key_id, { allowed_models: null });
    expect(cleared?.allowed_models).toBeUndefined();
    expect(await key.check('sim-pro', 'peek')).toMatchObject({ kind: 'allow', modelAllowLists: [] });
  });

  it('refuses a malformed list when a key is created or changed', async () => {
    await expect(keys.create({ plan: 'pro', allowed_models: ['gpt*-4o'] })).rejects.toThrow(KeyInputError);
    const key = await newKey();
    await expect(keys.update(key.key.key_id, { allowed_models: [''] })).rejects.toMatchObject({ param: 'allowed_models' });
    expect((await keys.get(key.key.key_id))?.allowed_models).toBeUndefined();
  });
});
