/**
 * The ResponseStoreService against a real Redis, over gRPC: a stored response reads back as it
 * was put, with its time to live set; only the key that stored it reads or deletes it; one over
 * the bound is not stored; a deleted one is gone.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callUnary, createClient, createGatewayServer, GatewayError, type GatewayServer } from '@gateway/grpc';
import { storedResponseKey } from '@gateway/keyspace';
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
        handlers: createResponseStoreService({ redis, logger, registry, ttlSeconds: TTL_SECONDS, maxBytes: MAX_BYTES }),
      },
    ]);
    const port = await server.listen('127.0.0.1:0');
    client = createClient(definition, `127.0.0.1:${port}`) as unknown as ResponseStoreServiceClient;
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
