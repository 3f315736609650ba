/**
 * Anthropic's Message Batches on the batch service, over real gRPC and PostgreSQL against a fake
 * edge: a batch created with its requests inline runs each as a POST to /v1/messages (with the
 * owner's key, the batch id and `anthropic-version`), counts its requests as Anthropic does, and
 * writes its results file in Anthropic's form (a 2xx `succeeded` with its message, another status
 * `errored` with Anthropic's envelope); malformed requests are refused naming the request; the
 * batches of each API are listed apart, a page after or before an id; a cancelled batch ends with
 * its unsent requests `canceled`; a batch is deleted only once ended, with its results file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { BatchInfoOutput, ListBatchesResponseOutput } from '@gateway/proto';
import { createTestDatabase, eventually, rejectedWith, type TestDatabase } from '@gateway/testing';
import { API_KEY, batchFile, call, createBatch, newOwner, readFile, type Replica, startFakeEdge, startReplica, upload } from './testing/harness.js';

let database: TestDatabase;
let replica: Replica;
let edge: Awaited<ReturnType<typeof startFakeEdge>>;
/** The url and `anthropic-version` of every request the fake edge received, by custom id. */
const received = new Map<string, { url: string; version: string }>();

/** The message the fake edge answers for `customId`. */
const message = (customId: string) => ({
  id: `msg_${customId}`,
  type: 'message',
  role: 'assistant',
  model: 'sim-mini',
  content: [{ type: 'text', text: `echo ${customId}` }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 3, output_tokens: 2 },
});

beforeAll(async () => {
  database = await createTestDatabase('batch_msg_test');
  edge = await startFakeEdge(async (request, _before, response, incoming) => {
    received.set(request.customId, { url: incoming.url ?? '', version: String(incoming.headers['anthropic-version'] ?? '') });
    if (incoming.url !== '/v1/messages') return false;
    if (request.customId.startsWith('bad-')) {
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } }));
      return true;
    }
    if (request.customId.startsWith('slow-')) await new Promise((resolve) => setTimeout(resolve, 50));
    response.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${request.customId}` }).end(JSON.stringify(message(request.customId)));
    return true;
  });
  replica = await startReplica(database.url, edge.url, { laneConcurrency: 4, lineAttempts: 2 });
});

afterAll(async () => {
  await replica?.close();
  await edge?.close();
  await database?.drop();
});

/** The inline requests of a message batch, one a custom id, each asking for its own id. */
const requests = (ids: string[]) =>
  ids.map((id) => JSON.stringify({ custom_id: id, params: { model: 'sim-mini', max_tokens: 16, messages: [{ role: 'user', content: id }] } })).join('\n');

const create = (owner: object, jsonl: string) =>
  call<Required<BatchInfoOutput>>(replica.client, 'CreateMessageBatch', { owner, api_key: API_KEY, requests_jsonl: jsonl });

/** Waits for the batch to reach `status`. */
const ended = (owner: object, id: string, status = 'completed') =>
  eventually(async () => {
    const batch = await call<Required<BatchInfoOutput>>(replica.client, 'GetBatch', { owner, batch_id: id });
    return batch.status === status && batch;
  }, `batch ${id} ${status}`);

/** The lines of a results file. */
const results = async (owner: object, fileId: string) =>
  (await readFile(replica.client, owner as never, fileId)).content
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { custom_id: string; result: { type: string; message?: unknown; error?: unknown } });

describe('message batches', () => {
  it('runs inline requests on /v1/messages and writes Anthropic results with its counts', async () => {
    const owner = newOwner();
    const ids = [...Array.from({ length: 30 }, (_, index) => `msg-${index}`), 'bad-1'];
    const created = await create(owner, requests(ids));
    expect(created.id).toMatch(/^msgbatch_[A-Za-z0-9]{24}$/);
    expect(created).toMatchObject({ api: 'anthropic', endpoint: '/v1/messages', input_file_id: '', status: 'in_progress' });
    expect(created.request_counts?.total).toBe(31);
    const early = created.message_counts as Required<NonNullable<BatchInfoOutput['message_counts']>>;
    expect(early.processing + early.succeeded + early.errored).toBe(31);
    const batch = await ended(owner, created.id);
    expect(batch.message_counts).toEqual({ processing: 0, succeeded: 30, errored: 1, canceled: 0, expired: 0 });
    expect(batch.error_file_id ?? '').toBe('');
    for (const id of ids) expect(received.get(id)).toEqual({ url: '/v1/messages', version: '2023-06-01' });
    const lines = await results(owner, batch.output_file_id);
    expect(lines.map((line) => line.custom_id)).toEqual(ids);
    expect(lines[3]).toEqual({ custom_id: 'msg-3', result: { type: 'succeeded', message: message('msg-3') } });
    expect(lines.at(-1)).toEqual({
      custom_id: 'bad-1',
      result: { type: 'errored', error: { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } } },
    });
  });

  it('refuses malformed requests naming the request', async () => {
    const owner = newOwner();
    const cases: Array<[string, RegExp]> = [
      [`${requests(['a-1'])}\n${requests(['a-1'])}`, /^requests\[1\]: `custom_id` "a-1" is used by an earlier request/],
      [requests(['has space']), /^requests\[0\]: `custom_id` must be/],
      [JSON.stringify({ custom_id: 'x-1' }), /^requests\[0\]: `params` is missing/],
      ['', /at least one request/],
    ];
    for (const [jsonl, message] of cases) {
      const refused = await rejectedWith(GatewayError, create(owner, jsonl));
      expect(refused.code).toBe(GrpcStatus.INVALID_ARGUMENT);
      expect(refused.message).toMatch(message);
    }
  });

  it('lists the batches of each API apart, a page after or before an id', async () => {
    const owner = newOwner();
    const file = await upload(replica.client, owner, batchFile(['o-1']));
    const openai = await createBatch(replica.client, owner, file.id);
    const made: string[] = [];
    for (let index = 0; index < 3; index += 1) made.unshift((await create(owner, requests([`l-${index}`]))).id);
    const list = (request: object) => call<ListBatchesResponseOutput>(replica.client, 'ListBatches', { owner, ...request });
    expect((await list({ api: 'anthropic' })).batches.map((batch) => batch.id)).toEqual(made);
    expect((await list({})).batches.map((batch) => batch.id)).toEqual([openai.id]);
    const first = await list({ api: 'anthropic', limit: 2 });
    expect([first.batches.map((batch) => batch.id), first.has_more]).toEqual([made.slice(0, 2), true]);
    const next = await list({ api: 'anthropic', limit: 2, after: made[1] });
    expect([next.batches.map((batch) => batch.id), next.has_more]).toEqual([[made[2]], false]);
    const back = await list({ api: 'anthropic', limit: 1, before: made[2] });
    expect([back.batches.map((batch) => batch.id), back.has_more]).toEqual([[made[1]], true]);
    expect((await rejectedWith(GatewayError, list({ api: 'anthropic', after: openai.id }))).code).toBe(GrpcStatus.NOT_FOUND);
  });

  it('cancels a batch midway: its unsent requests canceled in the results', async () => {
    const owner = newOwner();
    const ids = Array.from({ length: 80 }, (_, index) => `slow-${index}`);
    const created = await create(owner, requests(ids));
    await eventually(() => ids.slice(0, 8).every((id) => received.has(id)), 'a few requests sent');
    const cancelling = await call<Required<BatchInfoOutput>>(replica.client, 'CancelBatch', { owner, batch_id: created.id });
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    const batch = await ended(owner, created.id, 'cancelled');
    const counts = batch.message_counts as Required<NonNullable<BatchInfoOutput['message_counts']>>;
    expect(counts.processing).toBe(0);
    expect(counts.canceled).toBeGreaterThan(0);
    expect(counts.succeeded).toBeGreaterThanOrEqual(8);
    expect(counts.succeeded + counts.canceled).toBe(80);
    const lines = await results(owner, batch.output_file_id);
    expect(lines.map((line) => line.custom_id)).toEqual(ids);
    expect(lines.filter((line) => line.result.type === 'canceled')).toHaveLength(counts.canceled);
  });

  it('deletes a batch only once it ended, with its results file; another key’s is not found', async () => {
    const owner = newOwner();
    const created = await create(owner, requests(['slow-d1', 'slow-d2', 'slow-d3', 'slow-d4', 'slow-d5', 'slow-d6']));
    const running = await rejectedWith(GatewayError, call(replica.client, 'DeleteBatch', { owner, batch_id: created.id }));
    expect([running.code, running.message]).toEqual([GrpcStatus.INVALID_ARGUMENT, expect.stringMatching(/has not ended/)]);
    const batch = await ended(owner, created.id);
    expect((await rejectedWith(GatewayError, call(replica.client, 'DeleteBatch', { owner: newOwner(), batch_id: created.id }))).code).toBe(
      GrpcStatus.NOT_FOUND,
    );
    expect(await call(replica.client, 'DeleteBatch', { owner, batch_id: created.id })).toEqual({ batch_id: created.id });
    expect((await rejectedWith(GatewayError, call(replica.client, 'GetBatch', { owner, batch_id: created.id }))).code).toBe(GrpcStatus.NOT_FOUND);
    expect((await rejectedWith(GatewayError, call(replica.client, 'GetFile', { owner, file_id: batch.output_file_id }))).code).toBe(GrpcStatus.NOT_FOUND);
    const { rows } = await replica.pool.query('SELECT count(*)::int AS lines FROM batch.batch_lines WHERE batch_id = $1', [created.id]);
    expect(rows[0].lines).toBe(0);
  });
});
