import { createLogger } from '@gateway/logger';
import { connectRedis, createRedis, deleteMatching, masters, type RedisClient } from '@gateway/redis';
import { freePort, hasRedisServer, type RedisCluster, redisUrl, serverProcess, type ServerProcess, startRedisCluster } from '@gateway/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { authKeys, spendKeyName, storedResponsesTotalKeys, teamSpendKeyName, windowKeyList } from '../keys.js';
import { checkQuota, plansArgument } from './check-quota.js';
import { createKeyRecord, deleteTeamRecord, updateKeyRecord } from './key-record.js';
import { luaModelAllowed } from './model-allow-list.js';
import { recordUsage } from './record-usage.js';
import { base62, TEST_RETENTION } from '../testing/script-fixtures.js';
import { loadScripts, SCRIPTS } from './registry.js';
import { deleteStoredResponse, putStoredResponse } from './response-store.js';
import { settleQuota } from './settle-quota.js';

// A service's client takes its first requests with every script unused on it, many at once and
// mixed with plain commands in the same tick (auto-pipelining puts them in one pipeline). Each
// script's first use must resolve or reject its own promise: never throw outside one (a process
// crash), never leave a caller hanging.

const logger = createLogger('keyspace-test', 'silent');
const CALLERS = 12;
const RESPONSE_BOUNDS = { maxPerKey: 5, maxBytesPerKey: 0, maxTotalBytes: 0 };
const PLANS = plansArgument({ starter: { requests: 10_000, tokens: 10_000_000, dailyBudget: 1_000, monthlyBudget: -1 } });

/** What fired all at once: ids that nothing else uses, so nothing is flushed or shared. */
interface Fixture {
  prefix: string;
  keyId: string;
  teamId: string;
  memberId: string;
}

function newFixture(): Fixture {
  return { prefix: `first-use-${base62(8)}:`, keyId: `key_${base62(16)}`, teamId: `team_${base62(16)}`, memberId: `key_${base62(16)}` };
}

/** Writes, with another client, the records the scripts read: a key, a team and a member key. */
async function seed(setup: RedisClient, { prefix, keyId, teamId, memberId }: Fixture): Promise<void> {
  const keys = authKeys(prefix);
  await setup.hset(keys.record(keyId), { key_id: keyId, plan: 'starter' });
  await setup.hset(keys.team(teamId), { team_id: teamId, daily_budget: '1000' });
  await setup.hset(keys.record(memberId, teamId), { key_id: memberId, plan: 'starter', team_id: teamId });
}

/**
 * Fires every script of the registry from CALLERS callers in one tick, each call preceded by plain
 * commands on the same keys; resolves each script's settled results, by the registry's name.
 */
function fireAll(redis: RedisClient, fixture: Fixture): Record<keyof typeof SCRIPTS, Promise<unknown>[]> {
  const { prefix, keyId, teamId, memberId } = fixture;
  const keys = authKeys(prefix);
  const quota = { prefix, reserveTokens: 10, mode: 'reserve' as const, windowMs: 60_000, lastUsedIntervalMs: 60_000, plans: PLANS, costBoundPicoUsd: 1_000 };
  const event = (id: number, member: boolean) => ({
    stream: 'first-use',
    eventId: `evt-${member ? 'm' : 'k'}-${id}`,
    sequence: id + 1,
    keyId: member ? memberId : keyId,
    ...(member && { teamId }),
    modelId: 'model-a',
    promptTokens: 3,
    completionTokens: 4,
    cachedTokens: 0,
    cacheWriteTokens: 0,
    costPicoUsd: 500n,
    atMs: Date.now(),
    failed: false,
    fellBack: false,
    recent: '',
  });
  const responsesTotal = storedResponsesTotalKeys(`${prefix}responses`);
  const storedResponse = (caller: number) => ({ keyId, responseId: `resp_${caller}`, response: '{}', input: '[]', ttlMs: 60_000 });
  const operations: Record<keyof typeof SCRIPTS, (caller: number) => Promise<unknown>> = {
    checkQuota: (caller) => checkQuota(redis, { ...quota, keyId, chargeId: `c${caller}` }),
    checkTeamQuota: (caller) => checkQuota(redis, { ...quota, keyId: memberId, teamId, chargeId: `c${caller}` }),
    recordUsage: (caller) =>
      recordUsage(redis, { event: event(caller, false), settlement: { chargeId: `c${caller}`, actualTokens: 7, prefix }, retention: TEST_RETENTION }),
    recordTeamUsage: (caller) =>
      recordUsage(redis, { event: event(caller, true), settlement: { chargeId: `c${caller}`, actualTokens: 7, prefix }, retention: TEST_RETENTION }),
    settleQuota: (caller) => settleQuota(redis, { reservation: { keyId, chargeId: `s${caller}` }, prefix, actualTokens: 0, windowMs: 60_000 }),
    settleTeamQuota: (caller) =>
      settleQuota(redis, { reservation: { keyId: memberId, chargeId: `s${caller}` }, teamId, prefix, actualTokens: 0, windowMs: 60_000 }),
    createKeyRecord: (caller) => createKeyRecord(redis, `${prefix}created:{${keyId}}:${caller}`, { key_id: keyId }),
    createTeamKeyRecord: (caller) =>
      createKeyRecord(
        redis,
        keys.record(`key_${base62(16)}`, teamId),
        { key_id: `key_new${caller}` },
        { team: keys.team(teamId), liveKeys: keys.teamKeys(teamId) },
      ),
    updateKeyRecord: (caller) => updateKeyRecord(redis, keys.record(keyId), { deletes: [], sets: { [`touched_${caller}`]: '1' } }),
    updateTeamKeyRecord: (caller) =>
      updateKeyRecord(redis, keys.record(memberId, teamId), { deletes: [], sets: { [`touched_${caller}`]: '1' } }, keys.teamKeys(teamId)),
    deleteTeam: () =>
      deleteTeamRecord(redis, { team: `${prefix}gone-team:{${teamId}}`, liveKeys: keys.teamKeys(teamId) }, windowKeyList(keys.teamWindow(teamId))),
    modelAllowed: (caller) => luaModelAllowed(redis, [['model-*']], `model-${caller}`),
    responsePut: (caller) => putStoredResponse(redis, storedResponse(caller), RESPONSE_BOUNDS, responsesTotal),
    // The total's script runs second in a put, and alone in a delete: fired alone here.
    responseTotal: (caller) => deleteStoredResponse(redis, keyId, `resp_gone${caller}`, responsesTotal, 60_000),
    responseDelete: (caller) => deleteStoredResponse(redis, keyId, `resp_${caller}`, responsesTotal, 60_000),
  };
  const fired = {} as Record<keyof typeof SCRIPTS, Promise<unknown>[]>;
  for (const name of Object.keys(operations) as Array<keyof typeof SCRIPTS>) fired[name] = [];
  for (let caller = 0; caller < CALLERS; caller += 1) {
    // Plain commands on the scripts' slots first: the tick's pipelines exist before any script runs.
    void redis.get(keys.record(keyId)).catch(() => undefined);
    void redis.exists(spendKeyName(memberId, teamId), teamSpendKeyName(teamId)).catch(() => undefined);
    for (const [name, operation] of Object.entries(operations) as Array<[keyof typeof SCRIPTS, (caller: number) => Promise<unknown>]>) {
      fired[name].push(operation(caller));
    }
  }
  return fired;
}

/** Errors thrown outside any promise while a test runs (ioredis's, in its pipeline callbacks). */
const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => uncaught.push(error);

async function expectAllAnswered(fired: Record<keyof typeof SCRIPTS, Promise<unknown>[]>): Promise<void> {
  expect(Object.keys(fired).sort()).toEqual(Object.keys(SCRIPTS).sort());
  for (const [name, calls] of Object.entries(fired)) {
    const settled = await Promise.allSettled(calls);
    const failures = settled.filter((result) => result.status === 'rejected').map((result) => String((result as PromiseRejectedResult).reason));
    expect({ name, failures }).toEqual({ name, failures: [] });
  }
  // Whatever ioredis would throw outside a promise is thrown by now (its callbacks run on nextTick).
  await new Promise((resolve) => setImmediate(resolve));
  expect(uncaught.map(String)).toEqual([]);
}

async function expectOutcomes(fired: Record<keyof typeof SCRIPTS, Promise<unknown>[]>): Promise<void> {
  const quota = (await Promise.all(fired.checkQuota)) as Array<{ status: string }>;
  expect(quota.every((decision) => decision.status === 'allow')).toBe(true);
  const team = (await Promise.all(fired.checkTeamQuota)) as Array<{ status: string }>;
  expect(team.every((decision) => decision.status === 'allow')).toBe(true);
  const metered = (await Promise.all([...fired.recordUsage, ...fired.recordTeamUsage])) as Array<{ outcome: string }>;
  expect(metered.filter((record) => record.outcome === 'metered')).toHaveLength(2 * CALLERS);
  expect(await Promise.all(fired.modelAllowed)).toEqual(Array.from({ length: CALLERS }, () => true));
}

beforeAll(() => {
  process.on('uncaughtException', onUncaught);
});

afterAll(() => {
  process.off('uncaughtException', onUncaught);
});

describe('the first use of every script, from many callers at once', () => {
  let setup: RedisClient;
  const fixtures: Fixture[] = [];

  beforeAll(async () => {
    setup = connectRedis(await redisUrl());
  });

  afterEach(() => {
    uncaught.length = 0;
  });

  afterAll(async () => {
    for (const { prefix, keyId, teamId, memberId } of fixtures) {
      await deleteMatching(setup, `${prefix}*`);
      await deleteMatching(setup, `metering:*{${prefix}responses}*`);
      for (const id of [keyId, teamId, memberId]) await deleteMatching(setup, `metering:*{${id}}*`);
    }
    await setup?.quit();
  });

  it('answers every call on a fresh auto-pipelining client, mixed with plain commands in the same tick', async () => {
    const url = await redisUrl();
    for (let round = 0; round < 3; round += 1) {
      const fixture = newFixture();
      fixtures.push(fixture);
      await seed(setup, fixture);
      const redis = createRedis(url, logger);
      try {
        await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
        const fired = fireAll(redis, fixture);
        await expectAllAnswered(fired);
        await expectOutcomes(fired);
      } finally {
        redis.disconnect();
      }
    }
  });
});

describe('loadScripts', () => {
  it('loads every script of the registry into every master, waiting for a client still connecting', async () => {
    const redis = createRedis(await redisUrl(), logger);
    try {
      await loadScripts(redis);
      for (const node of masters(redis)) {
        expect(await node.script('EXISTS', ...Object.values(SCRIPTS).map((script) => script.sha))).toEqual(Object.values(SCRIPTS).map(() => 1));
      }
    } finally {
      redis.disconnect();
    }
  });
});

describe.runIf(hasRedisServer())('scripts a server does not have (a restart, a failover, a SCRIPT FLUSH)', () => {
  let server: ServerProcess;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    server = serverProcess('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], port);
    await server.start();
    url = `redis://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    await server?.kill('SIGTERM');
  });

  it('sends each script whole when the server answers NOSCRIPT, to every caller, again after a flush', async () => {
    const redis = createRedis(url, logger);
    const admin = connectRedis(url);
    try {
      await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
      for (let round = 0; round < 2; round += 1) {
        // Only this test's own server is flushed.
        await admin.script('FLUSH');
        const fixture = newFixture();
        await seed(admin, fixture);
        const fired = fireAll(redis, fixture);
        await expectAllAnswered(fired);
        await expectOutcomes(fired);
        const loaded = (await admin.script('EXISTS', ...Object.values(SCRIPTS).map((script) => script.sha))) as number[];
        expect(loaded).toEqual(Object.values(SCRIPTS).map(() => 1));
      }
    } finally {
      redis.disconnect();
      admin.disconnect();
    }
  });
  it('has every script in place before the first call once loadScripts resolved', async () => {
    const redis = createRedis(url, logger);
    const admin = connectRedis(url);
    try {
      await admin.script('FLUSH');
      await loadScripts(redis);
      expect(await admin.script('EXISTS', ...Object.values(SCRIPTS).map((script) => script.sha))).toEqual(Object.values(SCRIPTS).map(() => 1));
    } finally {
      redis.disconnect();
      admin.disconnect();
    }
  });
});

describe.runIf(hasRedisServer())('scripts the masters of a Redis Cluster do not have', () => {
  let cluster: RedisCluster;

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicas: 0 });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it("sends each script whole to the node of its keys when that node answers NOSCRIPT, to every caller, again after a flush of every master's scripts", async () => {
    const redis = createRedis(cluster.url, logger);
    const admin = connectRedis(cluster.url);
    try {
      await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
      for (let round = 0; round < 2; round += 1) {
        // Only this test's own cluster is flushed.
        for (const node of cluster.nodes) node.cli('SCRIPT', 'FLUSH');
        const fixture = newFixture();
        await seed(admin, fixture);
        const fired = fireAll(redis, fixture);
        await expectAllAnswered(fired);
        await expectOutcomes(fired);
      }
    } finally {
      redis.disconnect();
      admin.disconnect();
    }
  });
});
