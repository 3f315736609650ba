/**
 * The Batch API against a fake batch service: a batch created with the owner and the caller's own
 * key, the body checked (a 400 naming the param, after the key's 401), OpenAI's Batch object with
 * null for every step not reached and every file not written, list pages and cancellation, the
 * batch service's failures as OpenAI's errors (404, 400 with its param, 503 when it cannot answer),
 * and the 404 of a gateway without a batch service on every route of both APIs.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { BatchInfoOutput } from '@gateway/proto';
import { BATCH_KEY, BATCH_KEY_ID, BATCH_TEAM_ID, batchKeyDecisions, fakeBatchService, OTHER_KEY, REVOKED_KEY } from '../../testing/fake-batch.js';
import { injectAs, recordingEdge, testEdge } from '../../testing/test-edge.js';

/** A batch just created: validating, nothing else happened yet. */
const CREATED: BatchInfoOutput = {
  id: 'batch_abc123',
  endpoint: '/v1/chat/completions',
  errors_json: '',
  input_file_id: 'file-abc123',
  completion_window: '24h',
  status: 'validating',
  output_file_id: '',
  error_file_id: '',
  created_at: 1_700_000_000,
  in_progress_at: 0,
  expires_at: 1_700_086_400,
  finalizing_at: 0,
  completed_at: 0,
  failed_at: 0,
  expired_at: 0,
  cancelling_at: 0,
  cancelled_at: 0,
  request_counts: { total: 0, completed: 0, failed: 0 },
  metadata_json: '{"job":"nightly"}',
};

/** The same batch once completed, with a line that got no answer. */
const COMPLETED: BatchInfoOutput = {
  ...CREATED,
  status: 'completed',
  output_file_id: 'file-out',
  error_file_id: 'file-err',
  in_progress_at: 1_700_000_010,
  finalizing_at: 1_700_000_100,
  completed_at: 1_700_000_110,
  request_counts: { total: 200, completed: 199, failed: 1 },
  metadata_json: '',
};

/** A batch whose file failed validation. */
const FAILED: BatchInfoOutput = {
  ...CREATED,
  id: 'batch_failed',
  status: 'failed',
  failed_at: 1_700_000_005,
  errors_json: JSON.stringify([{ code: 'invalid_json_line', message: 'Line 3 is not JSON.', param: null, line: 3 }]),
};

const notFound = () => new GatewayError(GrpcStatus.NOT_FOUND, 'not_found', 'No such batch: batch_nope.', { param: 'batch_id' });

const { app, received } = recordingEdge({ BATCH_SERVICE_ADDR: 'batch:50060' }, (record) => ({
  decisions: batchKeyDecisions(),
  batch: fakeBatchService(
    {
      unary: {
        CreateBatch: (request: { input_file_id: string }) => {
          if (request.input_file_id === 'file-nope')
            return new GatewayError(GrpcStatus.INVALID_ARGUMENT, 'invalid_value', 'No batch file file-nope of this key.', { param: 'input_file_id' });
          if (request.input_file_id === 'file-down') return new GatewayError(GrpcStatus.UNAVAILABLE, 'store_unavailable', 'PostgreSQL is down.');
          if (request.input_file_id === 'file-slow') return Object.assign(new Error('deadline'), { code: GrpcStatus.DEADLINE_EXCEEDED });
          return CREATED;
        },
        GetBatch: (request: { batch_id: string }) => (request.batch_id === COMPLETED.id ? COMPLETED : request.batch_id === FAILED.id ? FAILED : notFound()),
        ListBatches: { batches: [COMPLETED, FAILED], has_more: false },
        CancelBatch: (request: { batch_id: string }) =>
          request.batch_id === CREATED.id ? { ...CREATED, status: 'cancelling', cancelling_at: 1_700_000_050 } : notFound(),
      },
    },
    [],
    record,
  ),
}));

function refusal(response: LightMyRequestResponse) {
  return { status: response.statusCode, error: response.json().error };
}

const CREATE = { input_file_id: 'file-abc123', endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { job: 'nightly' } };
const OWNER = { key_id: BATCH_KEY_ID, team_id: BATCH_TEAM_ID };

/** CREATED as OpenAI's Batch object. */
const CREATED_JSON = {
  id: 'batch_abc123',
  object: 'batch',
  endpoint: '/v1/chat/completions',
  errors: null,
  input_file_id: 'file-abc123',
  completion_window: '24h',
  status: 'validating',
  output_file_id: null,
  error_file_id: null,
  created_at: 1_700_000_000,
  in_progress_at: null,
  expires_at: 1_700_086_400,
  finalizing_at: null,
  completed_at: null,
  failed_at: null,
  expired_at: null,
  cancelling_at: null,
  cancelled_at: null,
  request_counts: { total: 0, completed: 0, failed: 0 },
  metadata: { job: 'nightly' },
};

describe('POST /v1/batches', () => {
  it("creates a batch with the key's owner and the caller's own key, answering OpenAI's Batch object", async () => {
    const response = await injectAs(app(), BATCH_KEY, 'POST', '/v1/batches', CREATE);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toStrictEqual(CREATED_JSON);
    expect(received).toEqual([
      {
        method: 'CreateBatch',
        request: {
          owner: OWNER,
          api_key: BATCH_KEY,
          input_file_id: 'file-abc123',
          endpoint: '/v1/chat/completions',
          completion_window: '24h',
          metadata_json: '{"job":"nightly"}',
        },
      },
    ]);
    // No metadata, or null: none.
    await injectAs(app(), BATCH_KEY, 'POST', '/v1/batches', { ...CREATE, metadata: null });
    expect(received[1]!.request.metadata_json).toBe('');
  });

  it.each([
    [{ endpoint: '/v1/chat/completions', completion_window: '24h' }, 'input_file_id'],
    [{ ...CREATE, input_file_id: 42 }, 'input_file_id'],
    [{ ...CREATE, endpoint: '/v1/completions' }, 'endpoint'],
    [{ input_file_id: 'file-abc123', completion_window: '24h' }, 'endpoint'],
    [{ ...CREATE, completion_window: '1h' }, 'completion_window'],
    [{ ...CREATE, metadata: Object.fromEntries(Array.from({ length: 17 }, (_, index) => [`k${index}`, 'v'])) }, 'metadata'],
    [{ ...CREATE, metadata: { job: 7 } }, 'metadata'],
    [{ ...CREATE, moon: true }, 'moon'],
  ])('refuses %j, naming %s', async (body, param) => {
    const response = await injectAs(app(), BATCH_KEY, 'POST', '/v1/batches', body);
    expect(refusal(response)).toMatchObject({ status: 400, error: { type: 'invalid_request_error', param } });
    expect(received).toEqual([]);
  });

  it('answers a bad or revoked key with a 401 before looking at the body', async () => {
    expect(refusal(await injectAs(app(), 'br-nope', 'POST', '/v1/batches', { moon: 1 }))).toMatchObject({ status: 401, error: { code: 'invalid_api_key' } });
    expect(refusal(await injectAs(app(), REVOKED_KEY, 'POST', '/v1/batches', CREATE))).toMatchObject({
      status: 401,
      error: { message: 'This API key has been revoked.' },
    });
    expect(refusal(await injectAs(app(), { authorization: '' }, 'GET', '/v1/batches'))).toMatchObject({ status: 401, error: { code: 'missing_api_key' } });
    expect(received).toEqual([]);
  });

  it("answers the batch service's refusal with its param, and a service that cannot answer with a 503", async () => {
    expect(refusal(await injectAs(app(), BATCH_KEY, 'POST', '/v1/batches', { ...CREATE, input_file_id: 'file-nope' }))).toEqual({
      status: 400,
      error: { message: 'No batch file file-nope of this key.', type: 'invalid_request_error', param: 'input_file_id', code: 'invalid_value' },
    });
    for (const input_file_id of ['file-down', 'file-slow']) {
      const response = await injectAs(app(), BATCH_KEY, 'POST', '/v1/batches', { ...CREATE, input_file_id });
      expect(refusal(response)).toEqual({
        status: 503,
        error: {
          message: 'The batch service is unavailable right now. Please retry shortly.',
          type: 'service_unavailable_error',
          param: null,
          code: 'batch_service_unavailable',
        },
      });
      expect(response.headers['retry-after']).toBeDefined();
    }
  });
});

describe('GET /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel', () => {
  it('reads a batch: every step it reached, its files, its counts', async () => {
    const response = await injectAs(app(), BATCH_KEY, 'GET', '/v1/batches/batch_abc123');
    expect(response.json()).toStrictEqual({
      ...CREATED_JSON,
      status: 'completed',
      output_file_id: 'file-out',
      error_file_id: 'file-err',
      in_progress_at: 1_700_000_010,
      finalizing_at: 1_700_000_100,
      completed_at: 1_700_000_110,
      request_counts: { total: 200, completed: 199, failed: 1 },
      metadata: null,
    });
    expect(received).toEqual([{ method: 'GetBatch', request: { owner: OWNER, batch_id: 'batch_abc123' } }]);
  });

  it("shows a failed batch's errors as OpenAI's list", async () => {
    const response = await injectAs(app(), BATCH_KEY, 'GET', '/v1/batches/batch_failed');
    expect(response.json()).toMatchObject({
      status: 'failed',
      failed_at: 1_700_000_005,
      errors: { object: 'list', data: [{ code: 'invalid_json_line', message: 'Line 3 is not JSON.', param: null, line: 3 }] },
    });
  });

  it("answers another key's or an unknown batch with a 404", async () => {
    expect(refusal(await injectAs(app(), OTHER_KEY, 'GET', '/v1/batches/batch_nope'))).toEqual({
      status: 404,
      error: { message: 'No such batch: batch_nope.', type: 'invalid_request_error', param: 'batch_id', code: 'not_found' },
    });
    expect(received[0]!.request.owner).toEqual({ key_id: 'key_OOOOOOOOOOOOOOOO', team_id: '' });
  });

  it("lists the key's batches as OpenAI's page, with the query passed on", async () => {
    const response = await injectAs(app(), BATCH_KEY, 'GET', '/v1/batches?limit=2&after=batch_zzz');
    expect(response.json()).toMatchObject({ object: 'list', first_id: 'batch_abc123', last_id: 'batch_failed', has_more: false });
    expect(response.json().data).toHaveLength(2);
    expect(received).toEqual([{ method: 'ListBatches', request: { owner: OWNER, limit: 2, after: 'batch_zzz' } }]);
    expect(refusal(await injectAs(app(), BATCH_KEY, 'GET', '/v1/batches?limit=101'))).toMatchObject({ status: 400, error: { param: 'limit' } });
    expect(refusal(await injectAs(app(), BATCH_KEY, 'GET', '/v1/batches?after=file-1'))).toMatchObject({ status: 400, error: { param: 'after' } });
  });

  it('cancels a batch: cancelling, with the time it was asked', async () => {
    const response = await injectAs(app(), BATCH_KEY, 'POST', '/v1/batches/batch_abc123/cancel');
    expect(response.json()).toMatchObject({ id: 'batch_abc123', status: 'cancelling', cancelling_at: 1_700_000_050, cancelled_at: null });
    expect(received).toEqual([{ method: 'CancelBatch', request: { owner: OWNER, batch_id: 'batch_abc123' } }]);
    expect((await injectAs(app(), BATCH_KEY, 'POST', '/v1/batches/batch_nope/cancel')).statusCode).toBe(404);
  });
});

describe('a gateway without a batch service (BATCH_SERVICE_ADDR empty)', () => {
  let edge: FastifyInstance;
  beforeAll(async () => {
    edge = await testEdge({}, { decisions: batchKeyDecisions() });
  });
  afterAll(async () => {
    await edge.close();
  });

  it.each([
    ['POST', '/v1/files'],
    ['GET', '/v1/files'],
    ['GET', '/v1/files/file-abc123'],
    ['DELETE', '/v1/files/file-abc123'],
    ['GET', '/v1/files/file-abc123/content'],
    ['POST', '/v1/batches'],
    ['GET', '/v1/batches'],
    ['GET', '/v1/batches/batch_abc123'],
    ['POST', '/v1/batches/batch_abc123/cancel'],
  ] as const)("answers %s %s with a 404 in OpenAI's envelope that says so", async (method, url) => {
    const response = await injectAs(edge, BATCH_KEY, method, url, method === 'POST' && url === '/v1/batches' ? CREATE : undefined);
    expect(refusal(response)).toEqual({
      status: 404,
      error: {
        message: 'The gateway has no batch service configured: the Files and Batch APIs (/v1/files, /v1/batches, /v1/messages/batches) are not served here.',
        type: 'invalid_request_error',
        param: null,
        code: 'batch_not_configured',
      },
    });
  });

  it('still answers a bad key with a 401 first', async () => {
    expect(refusal(await injectAs(edge, 'br-nope', 'GET', '/v1/batches'))).toMatchObject({ status: 401 });
  });
});
