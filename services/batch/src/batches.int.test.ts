/**
 * Batches over real gRPC and PostgreSQL against a fake edge: a batch of 200 lines runs to the end
 * (each line sent once with the owner's key and the batch id, never streamed; the output file in
 * input order with the edge's answers; the counts); a 429 with Retry-After is sent again and
 * answered once; a line whose edge cannot be reached lands in the error file; a cancelled batch
 * ends with what finished; another key's batch is not found; the sealed API key is gone from the
 * database once the batch ends and never appears in the logs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { BatchInfoOutput, ListBatchesResponseOutput } from '@gateway/proto';
import { createTestDatabase, eventually, rejectedWith, type TestDatabase } from '@gateway/testing';
import {
  API_KEY,
  batchFile,
  call,
  completion,
  createBatch,
  jsonLines,
  logLines,
  newOwner,
  readFile,
  type Replica,
  SECRETS_KEY,
  startFakeEdge,
  startReplica,
  upload,
} from './testing/harness.js';

let database: TestDatabase;
let replica: Replica;
let edge: Awaited<ReturnType<typeof startFakeEdge>>;

beforeAll(async () => {
  database = await createTestDatabase('batch_test');
  edge = await startFakeEdge(async (request, before, response) => {
    if (request.customId.startsWith('rate-') && before === 0) {
      response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end('{"error":{"code":"rate_limit_exceeded"}}');
      return true;
    }
    if (request.customId.startsWith('drop-')) {
      response.socket?.destroy();
      return true;
    }
    if (request.customId.startsWith('slow-')) await new Promise((resolve) => setTimeout(resolve, 50));
    return false;
  });
  replica = await startReplica(database.url, edge.url, { laneConcurrency: 4, lineAttempts: 2 });
});

afterAll(async () => {
  await replica?.close();
  await edge?.close();
  await database?.drop();
});

/** Waits for the batch to reach `status`. */
const ended = (owner: object, id: string, status = 'completed', timeoutMs = 20_000) =>
  eventually(
    async () => {
      const batch = await call<Required<BatchInfoOutput>>(replica.client, 'GetBatch', { owner, batch_id: id });
      return batch.status === status && batch;
    },
    `batch ${id} ${status}`,
    timeoutMs,
  );

describe('batches', () => {
  it('runs a batch of 200 lines: each sent once with the key and the batch id, the output in input order', async () => {
    const owner = newOwner();
    const ids = Array.from({ length: 200 }, (_, index) => `req-${index}`);
    const file = await upload(replica.client, owner, batchFile(ids));
    const created = await createBatch(replica.client, owner, file.id);
    expect(created).toMatchObject({ endpoint: '/v1/chat/completions', input_file_id: file.id, completion_window: '24h', metadata_json: '{"run":"test"}' });
    expect(created.id).toMatch(/^batch_[A-Za-z0-9]{24}$/);
    expect(created.expires_at - created.created_at).toBe(86_400);
    const batch = await ended(owner, created.id);
    expect(batch.request_counts).toEqual({ total: 200, completed: 200, failed: 0 });
    expect(batch.completed_at).toBeGreaterThan(0);
    expect(batch.error_file_id ?? '').toBe('');
    const mine = edge.seen.filter((request) => request.batchId === created.id);
    expect(mine.map((request) => request.customId).sort()).toEqual([...ids].sort());
    expect(mine.every((request) => !('stream' in request.body))).toBe(true);
    const output = jsonLines((await readFile(replica.client, owner, batch.output_file_id)).content);
    expect(output.map((line) => line.custom_id)).toEqual(ids);
    expect(output[7]).toEqual({
      id: expect.stringMatching(/^batch_req_[A-Za-z0-9]{24}$/),
      custom_id: 'req-7',
      response: { status_code: 200, request_id: 'req_req-7', body: completion('req-7') },
      error: null,
    });
    const info = await call<{ filename: string; purpose: string }>(replica.client, 'GetFile', { owner, file_id: batch.output_file_id });
    expect(info).toMatchObject({ filename: `${created.id}_output.jsonl`, purpose: 'batch_output' });
    const list = await call<ListBatchesResponseOutput>(replica.client, 'ListBatches', { owner });
    expect(list.batches.map((item) => item.id)).toEqual([created.id]);
    expect((await rejectedWith(GatewayError, call(replica.client, 'GetBatch', { owner: newOwner(), batch_id: created.id }))).code).toBe(GrpcStatus.NOT_FOUND);

    const { rows } = await replica.pool.query('SELECT sealed_api_key FROM batch.batches WHERE id = $1', [created.id]);
    expect(rows[0].sealed_api_key).toBeNull();
  });

  it('sends a line again after a 429 with Retry-After, and answers it once', async () => {
    const owner = newOwner();
    const file = await upload(replica.client, owner, batchFile(['plain-1', 'rate-1', 'plain-2']));
    const created = await createBatch(replica.client, owner, file.id);
    const batch = await ended(owner, created.id);
    expect(batch.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    expect(edge.seen.filter((request) => request.customId === 'rate-1')).toHaveLength(2);
    const output = jsonLines((await readFile(replica.client, owner, batch.output_file_id)).content);
    expect(output.map((line) => [line.custom_id, line.response.status_code])).toEqual([
      ['plain-1', 200],
      ['rate-1', 200],
      ['plain-2', 200],
    ]);
  });

  it('writes a line the edge never answered to the error file', async () => {
    const owner = newOwner();
    const file = await upload(replica.client, owner, batchFile(['fine-1', 'drop-1']));
    const created = await createBatch(replica.client, owner, file.id);
    const batch = await ended(owner, created.id);
    expect(batch.request_counts).toEqual({ total: 2, completed: 1, failed: 1 });
    expect(jsonLines((await readFile(replica.client, owner, batch.output_file_id)).content).map((line) => line.custom_id)).toEqual(['fine-1']);
    const errors = jsonLines((await readFile(replica.client, owner, batch.error_file_id)).content);
    expect(errors).toEqual([
      { id: expect.stringMatching(/^batch_req_/), custom_id: 'drop-1', response: null, error: { code: 'connection_failed', message: expect.any(String) } },
    ]);
    expect(edge.seen.filter((request) => request.customId === 'drop-1')).toHaveLength(2);
  });

  it('refuses a batch whose lines name another endpoint, or of another key’s file', async () => {
    const owner = newOwner();
    const file = await upload(replica.client, owner, batchFile(['e-1'], '/v1/embeddings'));
    const wrong = await rejectedWith(GatewayError, createBatch(replica.client, owner, file.id));
    expect(wrong.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(wrong.message).toMatch(/^Line 1 of the file: `url` \/v1\/embeddings is not the batch's endpoint/);
    expect((await rejectedWith(GatewayError, createBatch(replica.client, newOwner(), file.id, '/v1/embeddings'))).code).toBe(GrpcStatus.NOT_FOUND);
  });

  it('cancels a batch midway: cancelled, with the lines that finished', async () => {
    const owner = newOwner();
    const ids = Array.from({ length: 120 }, (_, index) => `slow-${index}`);
    const file = await upload(replica.client, owner, batchFile(ids));
    const created = await createBatch(replica.client, owner, file.id);
    await eventually(() => edge.seen.filter((request) => request.batchId === created.id).length >= 12, 'a few lines sent');
    const cancelling = await call<Required<BatchInfoOutput>>(replica.client, 'CancelBatch', { owner, batch_id: created.id });
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    const batch = await ended(owner, created.id, 'cancelled');
    expect(batch.cancelled_at).toBeGreaterThan(0);
    const output = jsonLines((await readFile(replica.client, owner, batch.output_file_id)).content);
    expect(output.length).toBe(batch.request_counts?.completed);
    expect(output.length).toBeGreaterThanOrEqual(12);
    expect(output.length).toBeLessThan(120);
    expect(output.map((line) => line.custom_id)).toEqual(ids.slice(0, output.length));
    expect(edge.seen.filter((request) => request.batchId === created.id).length).toBe(output.length);
    // Cancelling an ended batch answers it as it is.
    expect((await call<Required<BatchInfoOutput>>(replica.client, 'CancelBatch', { owner, batch_id: created.id })).status).toBe('cancelled');
  });

  it('never logs the API key or the secrets key', () => {
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.filter((line) => line.includes(API_KEY) || line.includes(SECRETS_KEY))).toEqual([]);
  });
});
