/**
 * The cache over real gRPC and real Redis servers (the shared one for settings and purges, a
 * bounded one of the test's own for entries), as the edge and the admin API use it: entries kept
 * by one replica found by another, never across scopes or models, gone after their TTL and after
 * a purge of their team, key, model or everything; settings validated, pushed to watchers of
 * every replica and audited; a Redis that does not answer is UNAVAILABLE at once.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { callUnary, createClient, GatewayError } from '@gateway/grpc';
import { AuditLog } from '@gateway/keyspace';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import {
  type CacheEntry,
  type CacheServiceClient,
  type CacheSettings,
  type CacheSettingsOutput,
  type LookupRequest,
  type LookupResponseOutput,
  loadGatewayGrpc,
  type PurgeRequest,
  type PurgeResponseOutput,
  type SettingsSnapshotOutput,
  type StoreRequest,
  type StoreResponseOutput,
} from '@gateway/proto';
import { connectRedis, createRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { redisUrl, rejectedWith, type RedisServer, startRedisServer } from '@gateway/testing';
import { type CacheApp, createServer } from './app.js';

const prefix = `cache-test-${randomBytes(4).toString('hex')}:`;
const logger = createLogger('cache', 'silent');
const TEAM = 'team_AAAAAAAAAAAAAAAA';
const OTHER_TEAM = 'team_BBBBBBBBBBBBBBBB';
let redis: RedisClient;
let entriesServer: RedisServer;
const apps: CacheApp[] = [];
const clients: CacheServiceClient[] = [];
const registries: prometheus.Registry[] = [];

async function startReplica(entriesUrl: string): Promise<CacheServiceClient> {
  const registry = new prometheus.Registry();
  registries.push(registry);
  const app = createServer({
    redis,
    cacheRedis: createRedis(entriesUrl, logger, { autoPipelining: false }),
    logger,
    registry,
    prefix,
    auditPrefix: `${prefix}auth:`,
    reloadIntervalMs: 50,
    maxEntryBytes: 4_096,
  });
  await app.state.start();
  await app.checkBounded();
  const port = await app.server.listen('127.0.0.1:0');
  apps.push(app);
  const client = createClient(loadGatewayGrpc().gateway.cache.v1.CacheService, `127.0.0.1:${port}`);
  clients.push(client);
  return client;
}

const CALL = { deadlineMs: 10_000, actor: { subject: 'test-admin', role: 'admin', via: 'static_token' } };
const until = (assertion: () => unknown) => vi.waitFor(assertion, { timeout: 10_000, interval: 20 });
const lookup = async (client: CacheServiceClient, request: LookupRequest) =>
  (await callUnary<LookupRequest, LookupResponseOutput>(client, client.Lookup, request, CALL)).entry ?? undefined;
const store = (client: CacheServiceClient, request: StoreRequest) => callUnary<StoreRequest, StoreResponseOutput>(client, client.Store, request, CALL);
const purge = (client: CacheServiceClient, request: PurgeRequest) => callUnary<PurgeRequest, PurgeResponseOutput>(client, client.Purge, request, CALL);
const putSettings = (client: CacheServiceClient, settings: CacheSettings) =>
  callUnary<CacheSettings, CacheSettingsOutput>(client, client.PutSettings, settings, CALL);

function entry(text: string): CacheEntry {
  return {
    chat: {
      id: 'chatcmpl-1',
      created: 1_700_000_000,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { content: text }, finish_reason: 'FINISH_REASON_STOP' }],
    },
    usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
    model_id: 'gpt-4o-mini',
    model_version: 'rev1',
    provider: 'openai-compatible',
    created_at_ms: Date.now(),
    cost_pico_usd: 1_234,
  };
}

let a: CacheServiceClient;
let b: CacheServiceClient;

beforeAll(async () => {
  redis = connectRedis(await redisUrl());
  entriesServer = await startRedisServer(['--maxmemory', '32mb', '--maxmemory-policy', 'allkeys-lru']);
  a = await startReplica(entriesServer.url);
  b = await startReplica(entriesServer.url);
});

afterAll(async () => {
  for (const client of clients) client.close();
  for (const app of apps) await app.server.shutdown(0);
  await deleteMatching(redis, `${prefix}*`);
  redis.disconnect();
  await entriesServer?.stop();
});

describe('entries', () => {
  it('are found on another replica, exactly as kept, and never under another scope, model or key', async () => {
    const address = { scope: `team:${TEAM}`, key: 'a'.repeat(64), model_id: 'gpt-4o-mini' };
    expect(await lookup(b, address)).toBeUndefined();
    expect(await store(a, { ...address, entry: entry('Paris.'), ttl_seconds: 60 })).toMatchObject({ stored: true });
    const found = await lookup(b, address);
    expect(found?.chat?.choices[0]?.message?.content).toBe('Paris.');
    expect(found).toMatchObject({ model_id: 'gpt-4o-mini', model_version: 'rev1', provider: 'openai-compatible', cost_pico_usd: 1_234 });
    expect(found?.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 });
    expect(await lookup(b, { ...address, scope: `team:${OTHER_TEAM}` })).toBeUndefined();
    expect(await lookup(b, { ...address, model_id: 'gpt-4o' })).toBeUndefined();
    expect(await lookup(b, { ...address, key: 'b'.repeat(64) })).toBeUndefined();
  });

  it('expire after their TTL', async () => {
    const address = { scope: `team:${TEAM}`, key: 'c'.repeat(64), model_id: 'gpt-4o-mini' };
    await store(a, { ...address, entry: entry('Soon gone.'), ttl_seconds: 1 });
    expect(await lookup(a, address)).toBeDefined();
    await until(async () => expect(await lookup(a, address)).toBeUndefined());
  });

  it('over the size cap are not kept, and say so', async () => {
    const address = { scope: `team:${TEAM}`, key: 'd'.repeat(64), model_id: 'gpt-4o-mini' };
    expect(await store(a, { ...address, entry: entry('x'.repeat(8_000)), ttl_seconds: 60 })).toEqual({ stored: false, reason: 'too_large' });
    expect(await lookup(a, address)).toBeUndefined();
  });

  it('are refused a Store without a scope, a key or a TTL', async () => {
    const refused = await rejectedWith(GatewayError, store(a, { scope: '', key: 'e', model_id: 'm', entry: entry('x'), ttl_seconds: 60 }));
    expect(refused.reason).toBe('invalid_request');
    expect((await rejectedWith(GatewayError, store(a, { scope: 's', key: 'e', model_id: 'm', entry: entry('x'), ttl_seconds: 0 }))).reason).toBe(
      'invalid_request',
    );
  });
});

describe('purges', () => {
  it('of a team, a key, a model and everything make exactly their entries unreachable, on every replica', async () => {
    const keep = async (scope: string, model: string, key: string) => {
      const address = { scope, key, model_id: model };
      await store(a, { ...address, entry: entry(`${scope} ${model}`), ttl_seconds: 600 });
      return address;
    };
    const team = await keep(`team:${TEAM}`, 'gpt-4o-mini', '1'.repeat(64));
    const other = await keep(`team:${OTHER_TEAM}`, 'gpt-4o-mini', '1'.repeat(64));
    const key = await keep('key:key_solo', 'gpt-4o-mini', '2'.repeat(64));
    const model = await keep(`team:${OTHER_TEAM}`, 'claude-haiku', '3'.repeat(64));

    expect(await purge(a, { team_id: TEAM })).toEqual({ purged: [`scope:team:${TEAM}`] });
    expect(await lookup(a, team)).toBeUndefined();
    await until(async () => expect(await lookup(b, team)).toBeUndefined());
    expect(await lookup(b, other)).toBeDefined();
    expect(await lookup(b, key)).toBeDefined();

    await purge(b, { key_id: 'key_solo' });
    await until(async () => expect(await lookup(a, key)).toBeUndefined());
    expect(await lookup(a, other)).toBeDefined();

    await purge(a, { model_id: 'claude-haiku' });
    await until(async () => expect(await lookup(b, model)).toBeUndefined());
    expect(await lookup(b, other)).toBeDefined();

    // An entry kept after a purge is found again.
    await store(a, { ...team, entry: entry('again'), ttl_seconds: 600 });
    expect((await lookup(a, team))?.chat?.choices[0]?.message?.content).toBe('again');

    await purge(a, { all: true });
    await until(async () => {
      expect(await lookup(b, other)).toBeUndefined();
      expect(await lookup(b, team)).toBeUndefined();
    });
    const trail = await new AuditLog(redis, { prefix: `${prefix}auth:` }).list({ target_id: TEAM });
    expect(trail.entries.map((item) => [item.action, item.actor.subject])).toContainEqual(['cache.purge', 'test-admin']);
  });

  it('of a team that shares a group reach the group too', async () => {
    await putSettings(a, { target: `team:${TEAM}`, scope: 'shared:research' });
    expect(await purge(a, { team_id: TEAM })).toEqual({ purged: [`scope:team:${TEAM}`, 'scope:shared:research'] });
    await callUnary(a, a.DeleteSettings, { target: `team:${TEAM}` }, CALL);
  });

  it('name exactly one thing, well formed', async () => {
    for (const request of [{}, { team_id: TEAM, all: true }, { team_id: 'team_x' }, { key_id: 'nope' }, { model_id: 'a b' }] as PurgeRequest[])
      expect((await rejectedWith(GatewayError, purge(a, request))).reason).toBe('invalid_request');
  });
});

describe('settings', () => {
  it('are put, read and removed through any replica, pushed to every watcher, and audited', async () => {
    const snapshots: SettingsSnapshotOutput[] = [];
    const watch = b.WatchSettings({}, { deadline: Date.now() + 30_000 });
    watch.on('data', (snapshot: SettingsSnapshotOutput) => snapshots.push(snapshot));
    watch.on('error', () => {});
    const stored = await putSettings(a, { target: 'model:gpt-4o-mini', enabled: true, ttl_seconds: 120, hit_cost_ratio: 0.1 });
    expect(stored).toMatchObject({ target: 'model:gpt-4o-mini', enabled: true, ttl_seconds: 120, hit_cost_ratio: 0.1, updated_by: 'test-admin' });
    expect(stored.max_temperature).toBeUndefined();
    await until(() =>
      expect(snapshots.at(-1)?.settings.find((settings) => settings.target === 'model:gpt-4o-mini')).toMatchObject({ enabled: true, ttl_seconds: 120 }),
    );
    expect(await callUnary(b, b.GetSettings, { target: 'model:gpt-4o-mini' }, CALL)).toMatchObject({ enabled: true });
    await callUnary(b, b.DeleteSettings, { target: 'model:gpt-4o-mini' }, CALL);
    await until(() => expect(snapshots.at(-1)?.settings.some((settings) => settings.target === 'model:gpt-4o-mini')).toBe(false));
    expect((await rejectedWith(GatewayError, callUnary(a, a.GetSettings, { target: 'model:gpt-4o-mini' }, CALL))).reason).toBe('not_found');
    watch.cancel();
    const trail = await new AuditLog(redis, { prefix: `${prefix}auth:` }).list({ target_id: 'model:gpt-4o-mini' });
    expect(trail.entries.map((item) => item.action)).toEqual(['cache.settings.delete', 'cache.settings.put']);
  });

  it('refuse what cannot be applied, naming the field, and store nothing', async () => {
    const cases: Array<[CacheSettings, string]> = [
      [{ target: 'everyone' }, 'target'],
      [{ target: 'team:team_short' }, 'target'],
      [{ target: 'global', ttl_seconds: 0 }, 'ttl_seconds'],
      [{ target: 'global', ttl_seconds: 3_000_000 }, 'ttl_seconds'],
      [{ target: 'global', max_temperature: 3 }, 'max_temperature'],
      [{ target: 'global', hit_cost_ratio: 1.5 }, 'hit_cost_ratio'],
      [{ target: 'global', scope: 'everyone' }, 'scope'],
      [{ target: 'global', semantic_threshold: 0.2 }, 'semantic_threshold'],
      [{ target: 'global', semantic_model: 'an embedding model' }, 'semantic_model'],
    ];
    for (const [settings, param] of cases) {
      const refused = await rejectedWith(GatewayError, putSettings(a, settings));
      expect([refused.reason, refused.param]).toEqual(['invalid_request', param]);
    }
    // Nothing stored: replica a lists nothing once it has read the removal of the test before.
    await until(async () => expect((await callUnary<object, { settings: CacheSettingsOutput[] }>(a, a.ListSettings, {}, CALL)).settings).toEqual([]));
  });
});

describe('an entries Redis', () => {
  it('that is bounded and evicting is reported so; one that is not is reported and logged', async () => {
    const metric = async (registry: prometheus.Registry, name: string) => (await registry.getSingleMetric(name)?.get())?.values[0]?.value;
    expect(await metric(registries[0]!, 'gateway_cache_redis_bounded')).toBe(1);
    expect(await metric(registries[0]!, 'gateway_cache_redis_up')).toBe(1);
    entriesServer.cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    try {
      await apps[0]!.checkBounded();
      expect(await metric(registries[0]!, 'gateway_cache_redis_bounded')).toBe(0);
    } finally {
      entriesServer.cli('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
    }
  });

  it('that does not answer makes a lookup UNAVAILABLE at once, counted as an error', async () => {
    const unreachable = await startReplica('redis://127.0.0.1:1');
    const started = Date.now();
    const refused = await rejectedWith(GatewayError, lookup(unreachable, { scope: `team:${TEAM}`, key: 'f'.repeat(64), model_id: 'gpt-4o-mini' }));
    expect(refused.reason).toBe('service_unavailable');
    expect(Date.now() - started).toBeLessThan(2_000);
    const errors = (await registries.at(-1)!.getSingleMetric('gateway_cache_lookups_total')?.get())?.values.find((value) => value.labels.result === 'error');
    expect(errors?.value).toBe(1);
  });
});
