/**
 * The Files API against a fake batch service: a multipart upload streamed into UploadFile's
 * messages (the owner from the key, the purpose whichever order the fields come in), refused for a
 * purpose other than `batch`, a missing field or a file past EDGE_MAX_FILE_BYTES (the upload then
 * cancelled), OpenAI's File, list and deletion shapes, the raw bytes of a file's content, and the
 * batch service's failures as OpenAI's errors.
 */
import type { LightMyRequestResponse } from 'fastify';
import { beforeEach, describe, expect, it } from 'vitest';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { CheckKeyRequest } from '@gateway/proto';
import {
  BATCH_KEY,
  BATCH_KEY_ID,
  BATCH_TEAM_ID,
  batchKeyDecisions,
  fakeBatchService,
  OTHER_KEY,
  OTHER_KEY_ID,
  type RecordedUpload,
  REVOKED_KEY,
} from '../../testing/fake-batch.js';
import { injectAs, recordingEdge } from '../../testing/test-edge.js';

const MAX_FILE_BYTES = 300_000;
const uploads: RecordedUpload[] = [];
const checks: CheckKeyRequest[] = [];

const FILE = { id: 'file-abc123', bytes: 120, created_at: 1_700_000_000, filename: 'input.jsonl', purpose: 'batch', expires_at: 0 };
const notFound = () => new GatewayError(GrpcStatus.NOT_FOUND, 'not_found', 'No such file: file-nope.', { param: 'file_id' });

const { app, received } = recordingEdge({ BATCH_SERVICE_ADDR: 'batch:50060', EDGE_MAX_FILE_BYTES: String(MAX_FILE_BYTES) }, (record) => ({
  decisions: batchKeyDecisions(checks),
  batch: fakeBatchService(
    {
      unary: {
        GetFile: (request: { file_id: string; owner: { key_id: string } }) =>
          request.file_id === FILE.id && request.owner.key_id === BATCH_KEY_ID ? FILE : notFound(),
        ListFiles: { files: [FILE, { ...FILE, id: 'file-older', purpose: 'batch_output', expires_at: 1_800_000_000 }], has_more: true },
        DeleteFile: (request: { file_id: string }) => (request.file_id === FILE.id ? { file_id: FILE.id } : notFound()),
      },
      failOn: { bytes: 'BROKEN', error: new GatewayError(GrpcStatus.INVALID_ARGUMENT, 'invalid_value', 'Line 2 is not JSON.', { param: 'file' }) },
      content: (request) => (request.file_id === FILE.id ? [Buffer.from('{"custom_id":"a"}\n'), Buffer.from('{"custom_id":"b"}\n')] : notFound()),
    },
    uploads,
    record,
  ),
}));

beforeEach(() => {
  uploads.length = 0;
  checks.length = 0;
});

/** A multipart form of `fields` (strings, and files as `{ file, filename }`), in their order, as fetch encodes it. */
async function form(fields: Array<[string, string | { file: Buffer; filename: string }]>): Promise<{ payload: Buffer; contentType: string }> {
  const body = new FormData();
  for (const [name, value] of fields) {
    if (typeof value === 'string') body.append(name, value);
    else body.append(name, new Blob([value.file]), value.filename);
  }
  const encoded = new Request('http://edge.test/v1/files', { method: 'POST', body });
  return { payload: Buffer.from(await encoded.arrayBuffer()), contentType: encoded.headers.get('content-type') ?? '' };
}

async function upload(fields: Array<[string, string | { file: Buffer; filename: string }]>, key = BATCH_KEY): Promise<LightMyRequestResponse> {
  const { payload, contentType } = await form(fields);
  return app().inject({ method: 'POST', url: '/v1/files', headers: { authorization: `Bearer ${key}`, 'content-type': contentType }, payload });
}

/** The bytes an upload carried, its messages after the first. */
function uploadedBytes(recorded: RecordedUpload): Buffer {
  return Buffer.concat(recorded.messages.slice(1).map((message) => Buffer.from(message.chunk as Uint8Array)));
}

function refusal(response: LightMyRequestResponse) {
  return { status: response.statusCode, error: response.json().error };
}

/** A JSONL file of `lines` chat completion lines, about 100 bytes each. */
function jsonl(lines: number): Buffer {
  const line = (index: number) =>
    JSON.stringify({
      custom_id: `line-${index}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'sim-mini', messages: [{ role: 'user', content: 'hi' }] },
    });
  return Buffer.from(`${Array.from({ length: lines }, (_, index) => line(index)).join('\n')}\n`);
}

describe('POST /v1/files', () => {
  it('streams the file into UploadFile: the owner, name and purpose first, then its bytes in several chunks', async () => {
    const file = jsonl(2_000);
    const response = await upload([
      ['purpose', 'batch'],
      ['file', { file, filename: 'input.jsonl' }],
    ]);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      id: 'file-abc123',
      object: 'file',
      bytes: file.length,
      created_at: 1_700_000_000,
      filename: 'input.jsonl',
      purpose: 'batch',
    });
    expect(uploads).toHaveLength(1);
    const [recorded] = uploads;
    expect(recorded!.messages[0]).toEqual({ start: { owner: { key_id: BATCH_KEY_ID, team_id: BATCH_TEAM_ID }, filename: 'input.jsonl', purpose: 'batch' } });
    // At most 64 KiB a message, whatever the size of the pieces the form arrives in.
    expect(recorded!.messages.length).toBe(1 + Math.ceil(file.length / 65_536));
    expect(recorded!.messages.slice(1).every((message) => message.chunk !== undefined && message.start === undefined)).toBe(true);
    expect(uploadedBytes(recorded!).equals(file)).toBe(true);
    expect(recorded).toMatchObject({ ended: true, cancelled: false });
    // The key was only checked: no request counted, no token reserved.
    expect(checks).toMatchObject([{ api_key: BATCH_KEY, check_only: true, reserve_tokens: 0 }]);
  });

  it('takes the file before its purpose, as the openai SDK sends them', async () => {
    const file = jsonl(10);
    const response = await upload([
      ['file', { file, filename: 'input.jsonl' }],
      ['purpose', 'batch'],
    ]);
    expect(response.statusCode).toBe(200);
    expect(uploadedBytes(uploads[0]!).equals(file)).toBe(true);
    expect(uploads[0]).toMatchObject({ ended: true, cancelled: false });
  });

  it('refuses a purpose other than batch, naming purpose, and keeps nothing of a file sent first', async () => {
    const purposeFirst = await upload([
      ['purpose', 'fine-tune'],
      ['file', { file: jsonl(3), filename: 'input.jsonl' }],
    ]);
    expect(refusal(purposeFirst)).toEqual({
      status: 400,
      error: {
        message: "Invalid value for 'purpose': the gateway keeps files of purpose 'batch' only, not 'fine-tune'.",
        type: 'invalid_request_error',
        param: 'purpose',
        code: 'invalid_value',
      },
    });
    expect(uploads).toEqual([]);
    const fileFirst = await upload([
      ['file', { file: jsonl(3), filename: 'input.jsonl' }],
      ['purpose', 'assistants'],
    ]);
    expect(refusal(fileFirst)).toMatchObject({ status: 400, error: { param: 'purpose', code: 'invalid_value' } });
    expect(uploads).toHaveLength(1);
    expect(uploads[0]).toMatchObject({ cancelled: true, ended: false });
  });

  it('refuses a form without purpose or without file, naming it', async () => {
    const noPurpose = await upload([['file', { file: jsonl(3), filename: 'input.jsonl' }]]);
    expect(refusal(noPurpose)).toMatchObject({ status: 400, error: { param: 'purpose', code: 'missing_required_parameter' } });
    expect(uploads[0]).toMatchObject({ cancelled: true, ended: false });
    const noFile = await upload([['purpose', 'batch']]);
    expect(refusal(noFile)).toEqual({
      status: 400,
      error: {
        message: "'file' is required: send the file as the form field 'file'.",
        type: 'invalid_request_error',
        param: 'file',
        code: 'missing_required_parameter',
      },
    });
    expect(uploads).toHaveLength(1);
  });

  it('answers 413 past EDGE_MAX_FILE_BYTES and cancels the upload', async () => {
    const response = await upload([
      ['purpose', 'batch'],
      ['file', { file: Buffer.alloc(MAX_FILE_BYTES + 1, 'a'), filename: 'big.jsonl' }],
    ]);
    expect(refusal(response)).toEqual({
      status: 413,
      error: {
        message: `The file is too large: the limit is ${MAX_FILE_BYTES} bytes.`,
        type: 'invalid_request_error',
        param: 'file',
        code: 'request_too_large',
      },
    });
    expect(uploads[0]).toMatchObject({ cancelled: true, ended: false });
    expect(uploadedBytes(uploads[0]!).length).toBeLessThanOrEqual(MAX_FILE_BYTES);
    // A file of exactly the bound is kept.
    const atBound = await upload([
      ['purpose', 'batch'],
      ['file', { file: Buffer.alloc(MAX_FILE_BYTES, 'a'), filename: 'big.jsonl' }],
    ]);
    expect(atBound.statusCode).toBe(200);
  });

  it("answers the batch service's refusal of the file as it is, its param included", async () => {
    const response = await upload([
      ['purpose', 'batch'],
      ['file', { file: Buffer.from('{"custom_id":"a"}\nBROKEN\n'), filename: 'input.jsonl' }],
    ]);
    expect(refusal(response)).toEqual({
      status: 400,
      error: { message: 'Line 2 is not JSON.', type: 'invalid_request_error', param: 'file', code: 'invalid_value' },
    });
  });

  it('refuses a body that is no multipart form with a 415', async () => {
    const response = await injectAs(app(), BATCH_KEY, 'POST', '/v1/files', { purpose: 'batch' });
    expect(refusal(response)).toMatchObject({ status: 415, error: { code: 'unsupported_media_type' } });
  });

  it('refuses a bad or revoked key with a 401 before reading the form', async () => {
    const bad = await upload([['purpose', 'batch']], 'br-nope');
    expect(refusal(bad)).toMatchObject({ status: 401, error: { code: 'invalid_api_key' } });
    const revoked = await upload([['purpose', 'batch']], REVOKED_KEY);
    expect(refusal(revoked)).toMatchObject({ status: 401, error: { code: 'invalid_api_key', message: 'This API key has been revoked.' } });
    expect(uploads).toEqual([]);
  });
});

describe('GET /v1/files, GET and DELETE /v1/files/{id}', () => {
  it("answers OpenAI's list of the key's files, with the query passed on", async () => {
    const response = await injectAs(app(), BATCH_KEY, 'GET', '/v1/files?purpose=batch&limit=2&after=file-zzz');
    expect(response.json()).toEqual({
      object: 'list',
      data: [
        { id: 'file-abc123', object: 'file', bytes: 120, created_at: 1_700_000_000, filename: 'input.jsonl', purpose: 'batch' },
        {
          id: 'file-older',
          object: 'file',
          bytes: 120,
          created_at: 1_700_000_000,
          filename: 'input.jsonl',
          purpose: 'batch_output',
          expires_at: 1_800_000_000,
        },
      ],
      first_id: 'file-abc123',
      last_id: 'file-older',
      has_more: true,
    });
    expect(received).toEqual([
      { method: 'ListFiles', request: { owner: { key_id: BATCH_KEY_ID, team_id: BATCH_TEAM_ID }, purpose: 'batch', limit: 2, after: 'file-zzz' } },
    ]);
  });

  it.each([
    ['?limit=0', 'limit'],
    ['?limit=10001', 'limit'],
    ['?after=batch_1', 'after'],
    ['?order=asc', 'order'],
    ['?moon=1', 'moon'],
  ])('refuses the query %s, naming %s', async (query, param) => {
    const response = await injectAs(app(), BATCH_KEY, 'GET', `/v1/files${query}`);
    expect(refusal(response)).toMatchObject({ status: 400, error: { param } });
    expect(received).toEqual([]);
  });

  it("reads and deletes a file of the key; another key's is a 404 as an unknown one", async () => {
    const file = await injectAs(app(), BATCH_KEY, 'GET', '/v1/files/file-abc123');
    expect(file.json()).toEqual({ id: 'file-abc123', object: 'file', bytes: 120, created_at: 1_700_000_000, filename: 'input.jsonl', purpose: 'batch' });
    const other = await injectAs(app(), OTHER_KEY, 'GET', '/v1/files/file-abc123');
    expect(refusal(other)).toEqual({
      status: 404,
      error: { message: 'No such file: file-nope.', type: 'invalid_request_error', param: 'file_id', code: 'not_found' },
    });
    expect(received[1]).toEqual({ method: 'GetFile', request: { owner: { key_id: OTHER_KEY_ID, team_id: '' }, file_id: 'file-abc123' } });
    const deleted = await injectAs(app(), BATCH_KEY, 'DELETE', '/v1/files/file-abc123');
    expect(deleted.json()).toEqual({ id: 'file-abc123', object: 'file', deleted: true });
    expect((await injectAs(app(), BATCH_KEY, 'DELETE', '/v1/files/file-nope')).statusCode).toBe(404);
  });
});

describe('GET /v1/files/{id}/content', () => {
  it("sends the file's raw bytes as they stream", async () => {
    const response = await injectAs(app(), BATCH_KEY, 'GET', '/v1/files/file-abc123/content');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/octet-stream');
    expect(response.body).toBe('{"custom_id":"a"}\n{"custom_id":"b"}\n');
    expect(received).toMatchObject([{ method: 'FileContent', request: { owner: { key_id: BATCH_KEY_ID, team_id: BATCH_TEAM_ID }, file_id: 'file-abc123' } }]);
  });

  it("answers a file the key cannot read with a 404 in OpenAI's envelope, before any byte", async () => {
    const response = await injectAs(app(), BATCH_KEY, 'GET', '/v1/files/file-nope/content');
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(refusal(response)).toMatchObject({ status: 404, error: { code: 'not_found' } });
  });
});
