/**
 * Stored responses in a Redis of their own (RESPONSES_REDIS_URL, started by the test with
 * allkeys-lru, which that Redis may use) through the running cluster, with the official `openai`
 * client: they are kept there and not in the state Redis, a key over its bound loses its oldest
 * first, and when that Redis refuses writes (full, noeviction) every response is still answered,
 * only not stored (counted at the edge), and storing resumes once it has room, without a restart.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { connectRedis, keysMatching, type RedisClient } from '@gateway/redis';
import { eventually, hasRedisServer, type RedisServer, startRedisServer } from '@gateway/testing';
import { metric, startCluster, type Cluster } from './cluster.js';

const MODEL = 'sim-mini';
const MAX_PER_KEY = 3;

describe.skipIf(!hasRedisServer())('stored responses in a Redis of their own', () => {
  let responsesServer: RedisServer;
  let gateway: Cluster;
  let client: OpenAI;
  let responsesRedis: RedisClient;
  let stateRedis: RedisClient;
  let keyId: string;

  beforeAll(async () => {
    responsesServer = await startRedisServer(['--maxmemory-policy', 'allkeys-lru']);
    gateway = await startCluster({
      env: { RESPONSES_REDIS_URL: responsesServer.url, METERING_RESPONSES_MAX_PER_KEY: String(MAX_PER_KEY), METERING_RESPONSES_TTL_SECONDS: '600' },
    });
    client = new OpenAI({ baseURL: gateway.baseUrl, apiKey: gateway.apiKey, maxRetries: 0 });
    responsesRedis = connectRedis(responsesServer.url);
    stateRedis = connectRedis(gateway.redisUrl);
    keyId = (await stateRedis.hget(`auth:key:${createHash('sha256').update(gateway.apiKey).digest('hex')}`, 'key_id'))!;
    expect(keyId).toMatch(/^key_/);
  });

  afterAll(async () => {
    responsesRedis?.disconnect();
    stateRedis?.disconnect();
    await gateway?.stop();
    await responsesServer?.stop();
  });

  /** Whether a stored response reads back (GET /v1/responses/{id}). */
  const found = (id: string) =>
    client.responses.retrieve(id).then(
      () => true,
      (error: unknown) => {
        if (error instanceof OpenAI.NotFoundError) return false;
        throw error;
      },
    );

  it('keeps them in their Redis, not the state Redis, and a key within its bound, oldest first', async () => {
    const ids: string[] = [];
    for (let turn = 0; turn < MAX_PER_KEY + 2; turn += 1) ids.push((await client.responses.create({ model: MODEL, input: `Question ${turn}` })).id);
    // Each is stored after its answer; a read waits for the edge's own store of that id, so the
    // latest three are read first: then every store is done.
    expect(await Promise.all(ids.slice(2).map(found))).toEqual([true, true, true]);
    expect(await Promise.all(ids.slice(0, 2).map(found))).toEqual([false, false]);
    expect((await keysMatching(responsesRedis, `metering:response:{${keyId}}:*`)).sort()).toEqual(
      ids
        .slice(2)
        .map((id) => `metering:response:{${keyId}}:${id}`)
        .sort(),
    );
    expect(await keysMatching(stateRedis, `metering:response:{${keyId}}:*`)).toEqual([]);
    // A conversation continues from its latest response.
    const next = await client.responses.create({ model: MODEL, input: 'And then?', previous_response_id: ids.at(-1)! });
    expect(next.previous_response_id).toBe(ids.at(-1));
  });

  it('answers every response while their Redis refuses writes, stores none meanwhile, and stores again once it has room', async () => {
    const edgeMetrics = `http://127.0.0.1:${gateway.ports.edgeMetrics}/metrics`;
    const failedBefore = await metric(edgeMetrics, 'gateway_responses_store_total', { outcome: 'failed' });
    const kept = (await client.responses.create({ model: MODEL, input: 'Kept before it filled' })).id;
    expect(await found(kept)).toBe(true);

    responsesServer.cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    responsesServer.cli('CONFIG', 'SET', 'maxmemory', '1');
    const answered: string[] = [];
    for (let turn = 0; turn < 3; turn += 1) {
      const response = await client.responses.create({ model: MODEL, input: `While full ${turn}` });
      expect(response.status).toBe('completed');
      expect(response.output_text.length).toBeGreaterThan(0);
      answered.push(response.id);
    }
    await eventually(
      async () => (await metric(edgeMetrics, 'gateway_responses_store_total', { outcome: 'failed' })) >= failedBefore + 3,
      'the three stores refused by the full Redis to be counted at the edge',
      10_000,
      50,
    );
    expect(await Promise.all(answered.map(found))).toEqual([false, false, false]);
    // What was stored before still reads back: a full Redis still answers reads.
    expect(await found(kept)).toBe(true);

    // Room again, by configuration alone.
    responsesServer.cli('CONFIG', 'SET', 'maxmemory', '0');
    const after = (await client.responses.create({ model: MODEL, input: 'Once it has room' })).id;
    expect(await found(after)).toBe(true);
  });
});
