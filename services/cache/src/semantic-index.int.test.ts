/**
 * Semantic lookups over real gRPC and real Redis servers (the shared one for settings and purges,
 * bounded ones of the test's own for entries and vectors), as the edge uses them: a near question
 * hits with its similarity and a far one misses; nothing is found across scope, model, embedding
 * model, context or vector length, nor after a purge or past the entry's TTL; what one replica
 * keeps another finds, and one started later reads it from Redis; the byte bound drops the oldest;
 * a large group is searched through usearch and finds what brute force finds; a Redis that does
 * not answer is UNAVAILABLE, and the index is read again once it answers.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callUnary, createClient, GatewayError } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import {
  type CacheEntry,
  type CacheServiceClient,
  type LookupRequest,
  type LookupResponseOutput,
  loadGatewayGrpc,
  type PurgeRequest,
  type PurgeResponseOutput,
  type StoreRequest,
  type StoreResponseOutput,
} from '@gateway/proto';
import { connectRedis, createRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { eventually, redisUrl, rejectedWith, type RedisServer, seededRandom as random, startRedisServer } from '@gateway/testing';
import { type CacheApp, createServer } from './app.js';
import { memberBytes } from './vector-group.js';
import { dot, unitVector, vectorBytes } from './vectors.js';

const prefix = `cache-semantic-test-${randomBytes(4).toString('hex')}:`;
const logger = createLogger('cache', 'silent');
const MODEL = 'gpt-4o-mini';
const EMBEDDING = 'text-embedding-3-small';
const CONTEXT = 'c'.repeat(64);
let redis: RedisClient;
let entriesServer: RedisServer;
let entriesRedis: RedisClient;
const servers: RedisServer[] = [];
const apps: CacheApp[] = [];
const clients: CacheServiceClient[] = [];

/** A started replica: its client, its app and its metrics. */
interface Replica {
  client: CacheServiceClient;
  app: CacheApp;
  registry: prometheus.Registry;
}

async function startReplica(options: { entriesUrl?: string; prefix?: string; semanticMaxBytes?: number } = {}): Promise<Replica> {
  const registry = new prometheus.Registry();
  const app = createServer({
    redis,
    cacheRedis: createRedis(options.entriesUrl ?? entriesServer.url, logger, { autoPipelining: false }),
    logger,
    registry,
    prefix: options.prefix ?? prefix,
    reloadIntervalMs: 50,
    maxEntryBytes: 4_096,
    ...(options.semanticMaxBytes !== undefined && { semanticMaxBytes: options.semanticMaxBytes }),
  });
  await app.state.start();
  await app.semantic.start();
  const port = await app.server.listen('127.0.0.1:0');
  apps.push(app);
  const client = createClient(loadGatewayGrpc().gateway.cache.v1.CacheService, `127.0.0.1:${port}`);
  clients.push(client);
  return { client, app, registry };
}

const CALL = { deadlineMs: 10_000, actor: { subject: 'test-admin', role: 'admin', via: 'static_token' } };
const lookup = (replica: Replica, request: LookupRequest) =>
  callUnary<LookupRequest, LookupResponseOutput>(replica.client, replica.client.Lookup, request, CALL);
const store = (replica: Replica, request: StoreRequest) => callUnary<StoreRequest, StoreResponseOutput>(replica.client, replica.client.Store, request, CALL);
const purge = (replica: Replica, request: PurgeRequest) => callUnary<PurgeRequest, PurgeResponseOutput>(replica.client, replica.client.Purge, request, CALL);
const metric = async (replica: Replica, name: string, labels: Record<string, string> = {}) =>
  (await replica.registry.getSingleMetric(name)?.get())?.values.find((value) => Object.entries(labels).every(([key, label]) => value.labels[key] === label))
    ?.value;

function entry(text: string): CacheEntry {
  return {
    chat: { id: 'chatcmpl-1', created: 1_700_000_000, model: MODEL, choices: [{ index: 0, message: { content: text }, finish_reason: 'FINISH_REASON_STOP' }] },
    usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
    model_id: MODEL,
    created_at_ms: Date.now(),
  };
}
const textOf = (response: LookupResponseOutput) => response.entry?.chat?.choices[0]?.message?.content;

/** A team id of the pattern purges take, unique to the test that asks. */
const teamId = () => `team_${randomBytes(8).toString('hex')}`;
const key = () => randomBytes(32).toString('hex');

/** What the edge sends for a question: its scope, model and semantic key. */
function question(scope: string, values: number[], overrides: { context?: string; embedding?: string; model?: string } = {}) {
  return {
    scope,
    model_id: overrides.model ?? MODEL,
    semantic: { context: overrides.context ?? CONTEXT, vector: vectorBytes(values), embedding_model: overrides.embedding ?? EMBEDDING },
  };
}
const near = (replica: Replica, scope: string, values: number[], overrides = {}, threshold = 0.95) =>
  lookup(replica, { ...question(scope, values, overrides), key: '', threshold });
const keep = (replica: Replica, scope: string, values: number[], text: string, options: { ttl?: number; key?: string } = {}) =>
  store(replica, { ...question(scope, values), key: options.key ?? key(), entry: entry(text), ttl_seconds: options.ttl ?? 600 });

/** Resolves once Date.now() has moved on, so the next vector kept is strictly newer. */
const nextMillisecond = (since = Date.now()) => eventually(() => Date.now() > since, 'the clock to move on');

const QUESTION = [1, 0.2, 0, 0, 0.1, 0, 0, 0];
const PARAPHRASE = [1, 0.25, 0.02, 0, 0.1, 0, 0, 0.01];
const OTHER_QUESTION = [0.8, 0, 0.6, 0, 0, 0, 0, 0];

let a: Replica;
let b: Replica;

beforeAll(async () => {
  redis = connectRedis(await redisUrl());
  entriesServer = await startRedisServer(['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru']);
  servers.push(entriesServer);
  entriesRedis = connectRedis(entriesServer.url);
  a = await startReplica();
  b = await startReplica();
});

afterAll(async () => {
  for (const client of clients) client.close();
  for (const app of apps) await app.server.shutdown(0);
  await deleteMatching(redis, `${prefix}*`);
  redis.disconnect();
  entriesRedis?.disconnect();
  for (const server of servers) await server.stop();
});

describe('a semantic lookup', () => {
  it('hits on a near question with its similarity, misses a far one, and counts both', async () => {
    const scope = `team:${teamId()}`;
    expect(await keep(a, scope, QUESTION, 'Paris.')).toMatchObject({ stored: true });
    const hit = await near(a, scope, PARAPHRASE);
    expect(textOf(hit)).toBe('Paris.');
    const expected = dot(unitVector(vectorBytes(QUESTION))!, unitVector(vectorBytes(PARAPHRASE))!);
    expect(hit.similarity).toBeCloseTo(expected, 5);
    expect(hit.similarity).toBeGreaterThan(0.95);
    const miss = await near(a, scope, OTHER_QUESTION);
    expect([miss.entry ?? undefined, miss.similarity ?? 0]).toEqual([undefined, 0]);
    // A far question is still a hit under a threshold it passes.
    expect(textOf(await near(a, scope, OTHER_QUESTION, {}, 0.5))).toBe('Paris.');
    expect(await metric(a, 'gateway_cache_semantic_lookups_total', { result: 'hit' })).toBe(2);
    expect(await metric(a, 'gateway_cache_semantic_lookups_total', { result: 'miss' })).toBe(1);
    expect(await metric(a, 'gateway_cache_lookups_total', { result: 'miss' })).toBe(0);
  });

  it('never hits across scope, model, embedding model, context or vector length, even with the same vector', async () => {
    const scope = `team:${teamId()}`;
    await keep(a, scope, QUESTION, 'Kept.');
    expect(textOf(await near(a, scope, QUESTION))).toBe('Kept.');
    expect(textOf(await near(a, `team:${teamId()}`, QUESTION))).toBeUndefined();
    expect(textOf(await near(a, scope, QUESTION, { model: 'gpt-4o' }))).toBeUndefined();
    expect(textOf(await near(a, scope, QUESTION, { embedding: 'text-embedding-3-large' }))).toBeUndefined();
    expect(textOf(await near(a, scope, QUESTION, { context: 'd'.repeat(64) }))).toBeUndefined();
    expect(textOf(await near(a, scope, [...QUESTION, 0]))).toBeUndefined();
  });

  it('refuses a malformed semantic key or threshold, naming it', async () => {
    const scope = `team:${teamId()}`;
    const cases: Array<[Promise<unknown>, string]> = [
      [lookup(a, { ...question(scope, QUESTION), key: '', threshold: 0.2 }), 'threshold'],
      [
        lookup(a, { scope, model_id: MODEL, key: '', threshold: 0.9, semantic: { context: CONTEXT, vector: new Uint8Array(6), embedding_model: EMBEDDING } }),
        'semantic.vector',
      ],
      [lookup(a, { ...question(scope, QUESTION, { context: '' }), key: '', threshold: 0.9 }), 'semantic.context'],
      [keep(a, scope, [0, 0, 0], 'Nothing.'), 'semantic.vector'],
    ];
    for (const [call, param] of cases) {
      const refused = await rejectedWith(GatewayError, call);
      expect([refused.reason, refused.param]).toEqual(['invalid_request', param]);
    }
  });

  it('finds nothing once the team is purged, on every replica, and finds what is kept after', async () => {
    const team = teamId();
    const scope = `team:${team}`;
    await keep(a, scope, QUESTION, 'Before.');
    await eventually(async () => textOf(await near(b, scope, PARAPHRASE)) === 'Before.', 'the entry on the other replica');
    await purge(a, { team_id: team });
    expect(textOf(await near(a, scope, PARAPHRASE))).toBeUndefined();
    await eventually(async () => textOf(await near(b, scope, PARAPHRASE)) === undefined, 'the purge on the other replica');
    await keep(a, scope, QUESTION, 'After.');
    expect(textOf(await near(a, scope, PARAPHRASE))).toBe('After.');
  });

  it('misses once the entry expired', async () => {
    const scope = `team:${teamId()}`;
    await keep(a, scope, QUESTION, 'Soon gone.', { ttl: 1 });
    expect(textOf(await near(a, scope, PARAPHRASE))).toBe('Soon gone.');
    await eventually(async () => textOf(await near(a, scope, PARAPHRASE)) === undefined, 'the entry to expire', 5_000, 100);
  });

  it('misses when the entry was evicted from Redis, and drops its vector', async () => {
    const scope = `team:${teamId()}`;
    const entryKey = key();
    await keep(a, scope, QUESTION, 'Evicted.', { key: entryKey });
    const [name] = await entriesRedis.keys(`${prefix}e:${scope}:*:${entryKey}`);
    expect(name).toBeDefined();
    await entriesRedis.del(name!);
    const gone = (await metric(a, 'gateway_cache_semantic_dropped_total', { reason: 'gone' })) ?? 0;
    expect(textOf(await near(a, scope, PARAPHRASE))).toBeUndefined();
    expect(await metric(a, 'gateway_cache_semantic_dropped_total', { reason: 'gone' })).toBe(gone + 1);
    expect(await entriesRedis.keys(`${prefix}v:*:${entryKey}`)).toEqual([]);
  });
});

describe('the semantic index across replicas', () => {
  it('finds on one replica what another kept', async () => {
    const scope = `team:${teamId()}`;
    await keep(a, scope, QUESTION, 'From A.');
    const found = await eventually(async () => {
      const response = await near(b, scope, PARAPHRASE);
      return textOf(response) === 'From A.' && response;
    }, 'the entry kept on A to be found on B');
    expect(found.similarity).toBeGreaterThan(0.95);
  });

  it('is read from Redis by a replica started after the entry was kept, even with the stream gone', async () => {
    const scope = `team:${teamId()}`;
    await keep(a, scope, QUESTION, 'Kept before.');
    // Without the stream only the vector keys can tell the new replica.
    await entriesRedis.del(`${prefix}semantic`);
    const late = await startReplica();
    expect(textOf(await near(late, scope, PARAPHRASE))).toBe('Kept before.');
    expect(await metric(late, 'gateway_cache_semantic_rebuilds_total')).toBe(1);
  });
});

describe('the byte bound', () => {
  it('drops the oldest vectors first', async () => {
    const own = `${prefix}bound:`;
    const scope = `team:${teamId()}`;
    const replica = await startReplica({ prefix: own, semanticMaxBytes: 2 * memberBytes(8, key()) });
    const questions = [QUESTION, OTHER_QUESTION, [0, 0, 0, 0, 1, 0.3, 0, 0]];
    for (const [index, values] of questions.entries()) {
      await keep(replica, scope, values, `Answer ${index}.`);
      await nextMillisecond();
    }
    expect(textOf(await near(replica, scope, questions[0]!))).toBeUndefined();
    expect(textOf(await near(replica, scope, questions[1]!))).toBe('Answer 1.');
    expect(textOf(await near(replica, scope, questions[2]!))).toBe('Answer 2.');
    expect(await metric(replica, 'gateway_cache_semantic_vectors')).toBe(2);
    expect(await metric(replica, 'gateway_cache_semantic_dropped_total', { reason: 'bound' })).toBeGreaterThanOrEqual(1);
    // The oldest is still in Redis: a replica of a larger bound finds it.
    const larger = await startReplica({ prefix: own });
    expect(textOf(await near(larger, scope, questions[0]!))).toBe('Answer 0.');
  });
});

describe('a large group', () => {
  it('is searched through usearch and finds the same nearest as brute force', async () => {
    const next = random(42);
    const dimensions = 16;
    const scope = `team:${teamId()}`;
    const kept = Array.from({ length: 1_100 }, (_, index) => ({ text: `Answer ${index}.`, values: Array.from({ length: dimensions }, () => next() - 0.5) }));
    for (let start = 0; start < kept.length; start += 100)
      await Promise.all(kept.slice(start, start + 100).map(({ text, values }) => keep(a, scope, values, text)));
    await eventually(async () => (await metric(a, 'gateway_cache_semantic_ann_groups')) === 1, 'the group searched through usearch');
    const normalized = kept.map(({ text, values }) => ({ text, vector: unitVector(vectorBytes(values))! }));
    const queries = [
      ...Array.from({ length: 20 }, () => Array.from({ length: dimensions }, () => next() - 0.5)),
      ...Array.from({ length: 20 }, (_, index) => kept[index * 53]!.values.map((value) => value + (next() - 0.5) * 0.05)),
    ];
    for (const values of queries) {
      const query = unitVector(vectorBytes(values))!;
      const exact = normalized
        .map(({ text, vector }) => ({ text, similarity: dot(query, vector) }))
        .reduce((best, item) => (item.similarity > best.similarity ? item : best));
      const found = await near(a, scope, values, {}, 0.5);
      expect(textOf(found)).toBe(exact.text);
      expect(found.similarity).toBeCloseTo(exact.similarity, 5);
    }
    // The other replica builds its own from the stream.
    await eventually(async () => (await metric(b, 'gateway_cache_semantic_ann_groups')) === 1, 'the group on the other replica');
    const expected = textOf(await near(a, scope, queries[25]!, {}, 0.5));
    await eventually(async () => textOf(await near(b, scope, queries[25]!, {}, 0.5)) === expected, 'the same nearest on the other replica');
  });
});

describe("a cache's Redis that does not answer", () => {
  it('makes semantic lookups UNAVAILABLE; once back, the index is read again and the stream followed', async () => {
    const server = await startRedisServer(['--maxmemory', '16mb', '--maxmemory-policy', 'allkeys-lru']);
    servers.push(server);
    const own = `${prefix}outage:`;
    const [first, second] = [await startReplica({ entriesUrl: server.url, prefix: own }), await startReplica({ entriesUrl: server.url, prefix: own })];
    const scope = `team:${teamId()}`;
    await keep(first, scope, QUESTION, 'Before the outage.');
    expect(await metric(first, 'gateway_cache_semantic_vectors')).toBe(1);
    await server.pause();
    const started = Date.now();
    expect((await rejectedWith(GatewayError, near(first, scope, PARAPHRASE))).reason).toBe('service_unavailable');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await metric(first, 'gateway_cache_semantic_lookups_total', { result: 'error' })).toBe(1);
    // It comes back empty: the rebuild drops what it no longer holds, and what is kept now is shared again.
    await server.resume();
    await eventually(async () => (await metric(first, 'gateway_cache_semantic_vectors')) === 0, 'the index read again', 15_000, 50);
    await eventually(async () => (await keep(first, scope, QUESTION, 'After the outage.').catch(() => undefined))?.stored, 'a store', 15_000, 50);
    await eventually(async () => textOf(await near(second, scope, PARAPHRASE).catch(() => ({}))) === 'After the outage.', 'the other replica', 15_000, 50);
  });

  it('does not hold back a shutdown while it is down', async () => {
    const server = await startRedisServer([]);
    servers.push(server);
    const replica = await startReplica({ entriesUrl: server.url, prefix: `${prefix}down:` });
    apps.splice(apps.indexOf(replica.app), 1);
    await server.pause();
    const started = Date.now();
    await replica.app.server.shutdown(0);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
