/**
 * Anthropic's Message Batches API against a fake batch service: a batch created with its requests
 * inline (the owner, the caller's own key read from `x-api-key`, the requests as JSON Lines),
 * Anthropic's Message Batch object (RFC 3339 times, null until they happen, `results_url` the
 * edge's own once ended), list pages with `after_id` / `before_id`, cancellation, the results file
 * streamed, deletion, and every error in Anthropic's envelope: the body's and the service's 400s,
 * the 401 of a bad key, the 404 (`not_found_error`) of another key's, an OpenAI or an unknown
 * batch, and the 404 of a gateway without a batch service.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { BatchInfoOutput } from '@gateway/proto';
import { BATCH_KEY, BATCH_KEY_ID, BATCH_TEAM_ID, batchKeyDecisions, fakeBatchService, OTHER_KEY } from '../../testing/fake-batch.js';
import { recordingEdge, testEdge } from '../../testing/test-edge.js';

const COUNTS = { processing: 2, succeeded: 0, errored: 0, canceled: 0, expired: 0 };

/** A message batch just created. */
const RUNNING: BatchInfoOutput = {
  id: 'msgbatch_run',
  api: 'anthropic',
  endpoint: '/v1/messages',
  status: 'in_progress',
  input_file_id: '',
  output_file_id: '',
  error_file_id: '',
  created_at: 1_700_000_000,
  in_progress_at: 1_700_000_000,
  expires_at: 1_700_086_400,
  completed_at: 0,
  cancelling_at: 0,
  cancelled_at: 0,
  request_counts: { total: 2, completed: 0, failed: 0 },
  message_counts: COUNTS,
};

/** A message batch that ended, its results written. */
const ENDED: BatchInfoOutput = {
  ...RUNNING,
  id: 'msgbatch_done',
  status: 'completed',
  output_file_id: 'file-results',
  completed_at: 1_700_000_100,
  message_counts: { ...COUNTS, processing: 0, succeeded: 1, errored: 1 },
};

/** An OpenAI batch of the same key. */
const OPENAI: BatchInfoOutput = { ...ENDED, id: 'msgbatch_openai', api: 'openai' };

const RESULTS = '{"custom_id":"a","result":{"type":"succeeded","message":{}}}\n';

const notFound = (id: string) => new GatewayError(GrpcStatus.NOT_FOUND, 'not_found', `No such batch: ${id}.`, { param: 'batch_id' });
const byId = (id: string) => [RUNNING, ENDED, OPENAI].find((batch) => batch.id === id);

const { app, received } = recordingEdge({ BATCH_SERVICE_ADDR: 'batch:50060' }, (record) => ({
  decisions: batchKeyDecisions(),
  batch: fakeBatchService(
    {
      unary: {
        CreateMessageBatch: (request: { requests_jsonl: string }) =>
          request.requests_jsonl.includes('"dup"')
            ? new GatewayError(GrpcStatus.INVALID_ARGUMENT, 'invalid_value', 'requests[1]: `custom_id` "dup" is used by an earlier request.', {
                param: 'requests.1',
              })
            : RUNNING,
        GetBatch: (request: { batch_id: string; owner: { key_id: string } }) =>
          (request.owner.key_id === BATCH_KEY_ID && byId(request.batch_id)) || notFound(request.batch_id),
        ListBatches: { batches: [ENDED, RUNNING], has_more: true },
        CancelBatch: { ...RUNNING, status: 'cancelling', cancelling_at: 1_700_000_050 },
        DeleteBatch: (request: { batch_id: string }) => ({ batch_id: request.batch_id }),
      },
      content: () => [Buffer.from(RESULTS)],
    },
    [],
    record,
  ),
}));

const OWNER = { key_id: BATCH_KEY_ID, team_id: BATCH_TEAM_ID };
const REQUESTS = [
  { custom_id: 'a', params: { model: 'sim-mini', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] } },
  { custom_id: 'b', params: { model: 'sim-mini', messages: [] } },
];

/** A request as Anthropic's SDK sends it: the key in `x-api-key`, `anthropic-version`. */
function send(edge: FastifyInstance, method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, key = BATCH_KEY) {
  const headers: Record<string, string> = { 'anthropic-version': '2023-06-01', ...(key ? { 'x-api-key': key } : {}) };
  if (body === undefined) return edge.inject({ method, url, headers });
  return edge.inject({ method, url, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
}

function refusal(response: LightMyRequestResponse) {
  return { status: response.statusCode, body: response.json() };
}

const anthropicError = (type: string, message: unknown = expect.any(String)) => ({ type: 'error', error: { type, message } });

describe('POST /v1/messages/batches', () => {
  it("creates a batch of the inline requests with the key's owner and the caller's own key, answering Anthropic's Message Batch", async () => {
    const response = await send(app(), 'POST', '/v1/messages/batches', { requests: REQUESTS });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toStrictEqual({
      id: 'msgbatch_run',
      type: 'message_batch',
      processing_status: 'in_progress',
      request_counts: COUNTS,
      ended_at: null,
      created_at: '2023-11-14T22:13:20.000Z',
      expires_at: '2023-11-15T22:13:20.000Z',
      archived_at: null,
      cancel_initiated_at: null,
      results_url: null,
    });
    expect(received).toEqual([
      { method: 'CreateMessageBatch', request: { owner: OWNER, api_key: BATCH_KEY, requests_jsonl: REQUESTS.map((item) => JSON.stringify(item)).join('\n') } },
    ]);
  });

  it.each<[unknown]>([[[REQUESTS]], [{}], [{ requests: [] }], [{ requests: 'all' }], [{ requests: REQUESTS, moon: 1 }]])(
    'refuses %j in Anthropic’s envelope',
    async (body) => {
      expect(refusal(await send(app(), 'POST', '/v1/messages/batches', body))).toEqual({ status: 400, body: anthropicError('invalid_request_error') });
      expect(received).toEqual([]);
    },
  );

  it("answers the batch service's refusal as a 400, and a bad key with a 401 first", async () => {
    const duplicate = await send(app(), 'POST', '/v1/messages/batches', {
      requests: [REQUESTS[0], { ...REQUESTS[0], custom_id: 'dup' }, { custom_id: 'dup' }],
    });
    expect(refusal(duplicate)).toEqual({
      status: 400,
      body: anthropicError('invalid_request_error', 'requests[1]: `custom_id` "dup" is used by an earlier request.'),
    });
    expect(refusal(await send(app(), 'POST', '/v1/messages/batches', { moon: 1 }, 'br-nope'))).toEqual({
      status: 401,
      body: anthropicError('authentication_error'),
    });
    expect(refusal(await send(app(), 'GET', '/v1/messages/batches', undefined, ''))).toEqual({ status: 401, body: anthropicError('authentication_error') });
  });
});

describe('reading, listing, cancelling, results and deleting', () => {
  it('reads an ended batch: its counts, ended_at and the results_url of this edge', async () => {
    const response = await send(app(), 'GET', '/v1/messages/batches/msgbatch_done');
    expect(response.json()).toMatchObject({
      id: 'msgbatch_done',
      processing_status: 'ended',
      request_counts: { processing: 0, succeeded: 1, errored: 1, canceled: 0, expired: 0 },
      ended_at: '2023-11-14T22:15:00.000Z',
      results_url: 'http://localhost:80/v1/messages/batches/msgbatch_done/results',
    });
    expect(received).toEqual([{ method: 'GetBatch', request: { owner: OWNER, batch_id: 'msgbatch_done' } }]);
  });

  it("answers another key's batch, an OpenAI batch and an id of another form with Anthropic's 404", async () => {
    for (const [url, key] of [
      ['/v1/messages/batches/msgbatch_done', OTHER_KEY],
      ['/v1/messages/batches/msgbatch_openai', BATCH_KEY],
      ['/v1/messages/batches/batch_abc123', BATCH_KEY],
      ['/v1/messages/batches/msgbatch_done/results', OTHER_KEY],
      ['/v1/messages/batches/msgbatch_openai/cancel', BATCH_KEY],
    ] as const) {
      const method = url.endsWith('/cancel') ? 'POST' : 'GET';
      expect(refusal(await send(app(), method, url, undefined, key)), url).toEqual({ status: 404, body: anthropicError('not_found_error') });
    }
    expect(received.map((call) => call.method)).not.toContain('CancelBatch');
    // OpenAI's routes do not reach a message batch either.
    const openai = await app().inject({ method: 'GET', url: '/v1/batches/msgbatch_done', headers: { authorization: `Bearer ${BATCH_KEY}` } });
    expect(openai.statusCode).toBe(404);
  });

  it("lists the key's message batches as Anthropic's page, the cursors passed on", async () => {
    const response = await send(app(), 'GET', '/v1/messages/batches?limit=2&after_id=msgbatch_zzz');
    expect(response.json()).toMatchObject({ has_more: true, first_id: 'msgbatch_done', last_id: 'msgbatch_run' });
    expect(response.json().data.map((batch: { processing_status: string }) => batch.processing_status)).toEqual(['ended', 'in_progress']);
    await send(app(), 'GET', '/v1/messages/batches?before_id=msgbatch_aaa');
    expect(received).toEqual([
      { method: 'ListBatches', request: { owner: OWNER, api: 'anthropic', limit: 2, after: 'msgbatch_zzz', before: '' } },
      { method: 'ListBatches', request: { owner: OWNER, api: 'anthropic', limit: 0, after: '', before: 'msgbatch_aaa' } },
    ]);
    for (const query of ['limit=1001', 'limit=0', 'after_id=batch_1', 'after_id=msgbatch_a&before_id=msgbatch_b'])
      expect(refusal(await send(app(), 'GET', `/v1/messages/batches?${query}`)), query).toEqual({ status: 400, body: anthropicError('invalid_request_error') });
  });

  it('cancels a batch of the key: canceling, with the time it was asked', async () => {
    const response = await send(app(), 'POST', '/v1/messages/batches/msgbatch_run/cancel');
    expect(response.json()).toMatchObject({
      id: 'msgbatch_run',
      processing_status: 'canceling',
      cancel_initiated_at: '2023-11-14T22:14:10.000Z',
      ended_at: null,
    });
    expect(received.map((call) => call.method)).toEqual(['GetBatch', 'CancelBatch']);
  });

  it('streams the results of an ended batch as JSON Lines, and refuses those of a running one', async () => {
    const response = await send(app(), 'GET', '/v1/messages/batches/msgbatch_done/results');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/x-jsonl');
    expect(response.body).toBe(RESULTS);
    expect(received.at(-1)).toMatchObject({ method: 'FileContent', request: { owner: OWNER, file_id: 'file-results' } });
    expect(refusal(await send(app(), 'GET', '/v1/messages/batches/msgbatch_run/results'))).toEqual({
      status: 400,
      body: anthropicError('invalid_request_error', expect.stringMatching(/has not ended yet/)),
    });
  });

  it("deletes a batch of the key, answering Anthropic's deleted batch", async () => {
    const response = await send(app(), 'DELETE', '/v1/messages/batches/msgbatch_done');
    expect(response.json()).toStrictEqual({ id: 'msgbatch_done', type: 'message_batch_deleted' });
    expect(received.at(-1)).toEqual({ method: 'DeleteBatch', request: { owner: OWNER, batch_id: 'msgbatch_done' } });
  });
});

describe('a gateway without a batch service', () => {
  let edge: FastifyInstance;
  beforeAll(async () => {
    edge = await testEdge({}, { decisions: batchKeyDecisions() });
  });
  afterAll(async () => {
    await edge.close();
  });

  it.each([
    ['POST', '/v1/messages/batches'],
    ['GET', '/v1/messages/batches'],
    ['GET', '/v1/messages/batches/msgbatch_run'],
    ['POST', '/v1/messages/batches/msgbatch_run/cancel'],
    ['GET', '/v1/messages/batches/msgbatch_run/results'],
    ['DELETE', '/v1/messages/batches/msgbatch_run'],
  ] as const)("answers %s %s with Anthropic's 404 that says so", async (method, url) => {
    const response = await send(edge, method, url, method === 'POST' && url.endsWith('batches') ? { requests: REQUESTS } : undefined);
    expect(refusal(response)).toEqual({ status: 404, body: anthropicError('not_found_error', expect.stringMatching(/no batch service configured/)) });
  });
});
