/**
 * The ResponseStoreService against a real Redis, over gRPC: a stored response reads back as it
 * was put, with its time to live set; only the key that stored it reads or deletes it; one over
 * the bound is not stored; a deleted one is gone. The store's bounds: a key over its count or its
 * bytes loses its oldest responses, the store over its total loses the oldest of any key, the
 * newest is always stored, a deleted or expired response no longer counts.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callUnary, createClient, createGatewayServer, GatewayError, type GatewayServer } from '@gateway/grpc';
import { putStoredResponse, storedResponseKey, storedResponsesSizesKey, storedResponsesTotalKeys } from '@gateway/keyspace';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import {
  type DeleteResponseRequest,
  type DeleteResponseResponseOutput,
  type GetResponseRequest,
  type GetResponseResponseOutput,
  loadGatewayGrpc,
  type PutResponseRequest,
  type PutResponseResponseOutput,
  type ResponseStoreServiceClient,
} from '@gateway/proto';
import { createRedis, type RedisClient } from '@gateway/redis';
import { createResponseStoreService, RESPONSE_STORE_SERVICE_NAME } from './response-store-service.js';

const logger = createLogger('response-store-test', 'silent');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const TTL_SECONDS = 3_600;
const MAX_BYTES = 1_000;

function newKeyId(): string {
  return `key_${randomBytes(8).toString('hex')}`;
}

function newResponseId(): string {
  return `resp_${randomBytes(16).toString('hex')}`;
}

/** The store's total of a test of its own: other tests share this Redis. */
function newTotalTag(): string {
  return `responses-test-${randomBytes(6).toString('hex')}`;
}

/** A stored form of exactly `bytes` bytes (the response JSON; input `[]`, 2 bytes). */
function responseOfBytes(bytes: number): { response_json: string; input_items_json: string } {
  const empty = JSON.stringify({ text: '' });
  return { response_json: JSON.stringify({ text: 'x'.repeat(bytes - empty.length - 2) }), input_items_json: '[]' };
}

describe('ResponseStoreService', () => {
  let redis: RedisClient;
  let server: GatewayServer;
  let client: ResponseStoreServiceClient;
  const registry = new prometheus.Registry();

  beforeAll(async () => {
    redis = createRedis(REDIS_URL, logger);
    // It fails fast rather than queue: wait until it is connected.
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
    const definition = loadGatewayGrpc().gateway.responses.v1.ResponseStoreService;
    server = createGatewayServer([
      {
        name: RESPONSE_STORE_SERVICE_NAME,
        definition: definition.service,
        handlers: createResponseStoreService({ redis, logger, registry, ttlSeconds: TTL_SECONDS, maxBytes: MAX_BYTES, totalTag: newTotalTag() }),
      },
    ]);
    const port = await server.listen('127.0.0.1:0');
    client = createClient<ResponseStoreServiceClient>(definition, `127.0.0.1:${port}`);
  });

  afterAll(async () => {
    client?.close();
    await server?.shutdown(100);
    await redis?.quit();
  });

  const put = (request: PutResponseRequest) =>
    callUnary<PutResponseRequest, PutResponseResponseOutput>(client, client.PutResponse, request, { deadlineMs: 5_000 });
  const get = (request: GetResponseRequest) =>
    callUnary<GetResponseRequest, GetResponseResponseOutput>(client, client.GetResponse, request, { deadlineMs: 5_000 });
  const remove = (request: DeleteResponseRequest) =>
    callUnary<DeleteResponseRequest, DeleteResponseResponseOutput>(client, client.DeleteResponse, request, { deadlineMs: 5_000 });

  it('reads a stored response back as it was put, kept for the retention', async () => {
    const keyId = newKeyId();
    const responseId = newResponseId();
    const response_json = JSON.stringify({ id: responseId, object: 'response', output: [{ type: 'message', content: 'é' }] });
    const input_items_json = JSON.stringify([{ type: 'message', role: 'user', content: 'hi' }]);
    const stored = await put({ key_id: keyId, response_id: responseId, response_json, input_items_json });
    expect(stored).toEqual({ outcome: 'PUT_OUTCOME_STORED', ttl_seconds: TTL_SECONDS });
    const ttl = await redis.ttl(storedResponseKey(keyId, responseId));
    expect(ttl).toBeGreaterThan(TTL_SECONDS - 10);
    expect(ttl).toBeLessThanOrEqual(TTL_SECONDS);
    expect(await get({ key_id: keyId, response_id: responseId })).toEqual({ found: true, response_json, input_items_json });
  });

  it('finds a response only for the key that stored it', async () => {
    const owner = newKeyId();
    const other = newKeyId();
    const responseId = newResponseId();
    await put({ key_id: owner, response_id: responseId, response_json: '{"id":"x"}', input_items_json: '[]' });
    expect(await get({ key_id: other, response_id: responseId })).toEqual({ found: false });
    expect(await remove({ key_id: other, response_id: responseId })).toEqual({ deleted: false });
    // The other key's delete left it in place.
    expect((await get({ key_id: owner, response_id: responseId })).found).toBe(true);
  });

  it('deletes a response once: then it is not found', async () => {
    const keyId = newKeyId();
    const responseId = newResponseId();
    await put({ key_id: keyId, response_id: responseId, response_json: '{"id":"x"}', input_items_json: '[]' });
    expect(await remove({ key_id: keyId, response_id: responseId })).toEqual({ deleted: true });
    expect(await get({ key_id: keyId, response_id: responseId })).toEqual({ found: false });
    expect(await remove({ key_id: keyId, response_id: responseId })).toEqual({ deleted: false });
    expect(await redis.exists(storedResponseKey(keyId, responseId))).toBe(0);
  });

  it('does not store a response over the bound, and counts it', async () => {
    const keyId = newKeyId();
    const responseId = newResponseId();
    const response_json = JSON.stringify({ text: 'x'.repeat(MAX_BYTES) });
    expect(await put({ key_id: keyId, response_id: responseId, response_json, input_items_json: '[]' })).toEqual({ outcome: 'PUT_OUTCOME_TOO_LARGE' });
    expect(await redis.exists(storedResponseKey(keyId, responseId))).toBe(0);
    expect(await registry.getSingleMetricAsString('gateway_metering_responses_stored_total')).toContain('outcome="too_large"} 1');
  });

  it('finds nothing under an id the edge never draws, and refuses to store one', async () => {
    const keyId = newKeyId();
    expect(await get({ key_id: keyId, response_id: 'not-a-response' })).toEqual({ found: false });
    const refused = await put({ key_id: keyId, response_id: 'resp_../x', response_json: '{}', input_items_json: '[]' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(GatewayError);
    expect((refused as GatewayError).reason).toBe('invalid_request');
  });
});

describe("the stored responses' bounds", () => {
  const SIZE = 100;
  let redis: RedisClient;
  const servers: GatewayServer[] = [];
  const clients: ResponseStoreServiceClient[] = [];

  beforeAll(async () => {
    redis = createRedis(REDIS_URL, logger);
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  });

  afterAll(async () => {
    for (const client of clients) client.close();
    await Promise.all(servers.map((server) => server.shutdown(100)));
    await redis?.quit();
  });

  /** A store of its own with these bounds; its calls and its registry. */
  async function storeWith(bounds: { maxPerKey: number; maxBytesPerKey: number; maxTotalBytes: number }) {
    const registry = new prometheus.Registry();
    const totalTag = newTotalTag();
    const definition = loadGatewayGrpc().gateway.responses.v1.ResponseStoreService;
    const server = createGatewayServer([
      {
        name: RESPONSE_STORE_SERVICE_NAME,
        definition: definition.service,
        handlers: createResponseStoreService({ redis, logger, registry, ttlSeconds: TTL_SECONDS, bounds, totalTag }),
      },
    ]);
    servers.push(server);
    const port = await server.listen('127.0.0.1:0');
    const client = createClient<ResponseStoreServiceClient>(definition, `127.0.0.1:${port}`);
    clients.push(client);
    const put = async (keyId: string, answeredAtMs?: number) => {
      const responseId = newResponseId();
      const answer = await callUnary<PutResponseRequest, PutResponseResponseOutput>(
        client,
        client.PutResponse,
        { key_id: keyId, response_id: responseId, ...responseOfBytes(SIZE), ...(answeredAtMs === undefined ? {} : { answered_at_ms: answeredAtMs }) },
        { deadlineMs: 5_000 },
      );
      expect(answer.outcome).toBe('PUT_OUTCOME_STORED');
      return responseId;
    };
    const found = async (keyId: string, responseId: string) =>
      (
        await callUnary<GetResponseRequest, GetResponseResponseOutput>(
          client,
          client.GetResponse,
          { key_id: keyId, response_id: responseId },
          { deadlineMs: 5_000 },
        )
      ).found === true;
    const remove = (keyId: string, responseId: string) =>
      callUnary<DeleteResponseRequest, DeleteResponseResponseOutput>(
        client,
        client.DeleteResponse,
        { key_id: keyId, response_id: responseId },
        { deadlineMs: 5_000 },
      );
    const evicted = async (bound: 'key' | 'total') => {
      const text = await registry.getSingleMetricAsString('gateway_metering_responses_evicted_total');
      return Number(new RegExp(`bound="${bound}"} (\\d+)`).exec(text)?.[1]);
    };
    const storedBytes = async () => Number(/stored_bytes (\d+)/.exec(await registry.getSingleMetricAsString('gateway_metering_responses_stored_bytes'))?.[1]);
    return { put, found, remove, evicted, storedBytes, totalKeys: storedResponsesTotalKeys(totalTag) };
  }

  /** Which of the responses are still found, in order. */
  async function stillFound(store: { found: (keyId: string, responseId: string) => Promise<boolean> }, keyId: string, ids: string[]) {
    return Promise.all(ids.map((id) => store.found(keyId, id)));
  }

  it('keeps a key within its count, deleting its oldest responses first and never the newest', async () => {
    const store = await storeWith({ maxPerKey: 3, maxBytesPerKey: 0, maxTotalBytes: 0 });
    const keyId = newKeyId();
    const ids: string[] = [];
    for (let turn = 0; turn < 5; turn += 1) ids.push(await store.put(keyId));
    expect(await stillFound(store, keyId, ids)).toEqual([false, false, true, true, true]);
    // Gone from Redis, not only from the index.
    expect(await redis.exists(storedResponseKey(keyId, ids[0]!), storedResponseKey(keyId, ids[1]!))).toBe(0);
    expect(await store.evicted('key')).toBe(2);
    // Another key keeps its own count: the first key's responses are untouched by it.
    const other = newKeyId();
    for (let turn = 0; turn < 3; turn += 1) await store.put(other);
    expect(await stillFound(store, keyId, ids.slice(2))).toEqual([true, true, true]);
  });

  it('forgets the response answered first, whatever order the puts arrive in', async () => {
    const store = await storeWith({ maxPerKey: 2, maxBytesPerKey: 0, maxTotalBytes: 0 });
    const keyId = newKeyId();
    const answeredAt = Date.now();
    // Answered first, second and third; their puts arrive third, first and second.
    const third = await store.put(keyId, answeredAt + 2);
    const first = await store.put(keyId, answeredAt);
    const second = await store.put(keyId, answeredAt + 1);
    expect(await stillFound(store, keyId, [first, second, third])).toEqual([false, true, true]);
  });

  it("keeps a key within its bytes, counting each response's stored form", async () => {
    const store = await storeWith({ maxPerKey: 0, maxBytesPerKey: 2 * SIZE + SIZE / 2, maxTotalBytes: 0 });
    const keyId = newKeyId();
    const ids = [await store.put(keyId), await store.put(keyId), await store.put(keyId)];
    expect(await stillFound(store, keyId, ids)).toEqual([false, true, true]);
    expect(await redis.hget(storedResponsesSizesKey(keyId), 'total')).toBe(String(2 * SIZE));
    // A deleted response frees its bytes: the next one evicts nothing.
    expect(await store.remove(keyId, ids[1]!)).toEqual({ deleted: true });
    ids.push(await store.put(keyId));
    expect(await stillFound(store, keyId, ids)).toEqual([false, false, true, true]);
    expect(await store.evicted('key')).toBe(1);
  });

  it('keeps the store within its total, deleting the oldest of any key first; a new response is always stored', async () => {
    const store = await storeWith({ maxPerKey: 0, maxBytesPerKey: 0, maxTotalBytes: 4 * SIZE });
    const [first, second, third] = [newKeyId(), newKeyId(), newKeyId()];
    const stored: Array<[string, string]> = [];
    for (const keyId of [first, second, third, first, second, third, first]) stored.push([keyId, await store.put(keyId)]);
    const found = await Promise.all(stored.map(([keyId, id]) => store.found(keyId, id)));
    expect(found).toEqual([false, false, false, true, true, true, true]);
    expect(await store.evicted('total')).toBe(3);
    expect(await store.storedBytes()).toBe(4 * SIZE);
    expect(await redis.hget(store.totalKeys.sizes, 'total')).toBe(String(4 * SIZE));
    // The evicted went from their keys' own accounts too.
    expect(await redis.hget(storedResponsesSizesKey(first), 'total')).toBe(String(2 * SIZE));
    // Deleting one frees its room in the total: the next put evicts nothing.
    await store.remove(second, stored[4]![1]);
    stored.push([second, await store.put(second)]);
    expect(await store.evicted('total')).toBe(3);
    expect(await Promise.all(stored.slice(3).map(([keyId, id]) => store.found(keyId, id)))).toEqual([true, false, true, true, true]);
  });

  it('no longer counts a response stored longer ago than the retention', async () => {
    const totalKeys = storedResponsesTotalKeys(newTotalTag());
    const keyId = newKeyId();
    const bounds = { maxPerKey: 2, maxBytesPerKey: 0, maxTotalBytes: 2 * SIZE };
    const ttlMs = 60_000;
    const now = Date.now();
    const body = responseOfBytes(SIZE);
    const put = (responseId: string, nowMs: number) =>
      putStoredResponse(redis, { keyId, responseId, response: body.response_json, input: body.input_items_json, ttlMs, nowMs }, bounds, totalKeys);
    await put(newResponseId(), now - 2 * ttlMs);
    await put(newResponseId(), now - 2 * ttlMs + 1);
    // Both earlier ones are past the retention (Redis expires them): neither counts, nothing is evicted.
    const latest = await put(newResponseId(), now);
    expect(latest).toEqual({ bytes: SIZE, evictedForKey: 0, evictedForTotal: 0, totalBytes: SIZE });
    expect(await redis.hget(storedResponsesSizesKey(keyId), 'total')).toBe(String(SIZE));
  });
});
