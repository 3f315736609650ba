/**
 * The batch service's files over real gRPC and PostgreSQL: kept and read back byte for byte,
 * listed newest first a page at a time, removed; another key's files not found; malformed batch
 * files refused naming the line; a file over the bound refused; the per-key bounds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { FileInfoOutput, ListFilesResponseOutput } from '@gateway/proto';
import { createTestDatabase, rejectedWith, type TestDatabase } from '@gateway/testing';
import { batchFile, call, newOwner, readFile, type Replica, startReplica, upload } from './testing/harness.js';

let database: TestDatabase;
let replica: Replica;

beforeAll(async () => {
  database = await createTestDatabase('batch_test');
  // No line runs here: the edge is never called.
  replica = await startReplica(database.url, 'http://127.0.0.1:9');
});

afterAll(async () => {
  await replica?.close();
  await database?.drop();
});

describe('files', () => {
  it('keeps a file and reads it back byte for byte, in chunks of 64 KiB', async () => {
    const owner = newOwner();
    const content = `${batchFile(Array.from({ length: 400 }, (_, index) => `line-${index}-${'x'.repeat(400)}`))}\n`;
    const info = await upload(replica.client, owner, content, { filename: 'requests.jsonl', chunkBytes: 10_000 });
    expect(info).toMatchObject({ bytes: Buffer.byteLength(content), filename: 'requests.jsonl', purpose: 'batch' });
    expect(info.id).toMatch(/^file-[A-Za-z0-9]{24}$/);
    const read = await readFile(replica.client, owner, info.id);
    expect(read.content.equals(Buffer.from(content))).toBe(true);
    expect(read.chunks.slice(0, -1).every((size) => size === 64 * 1024)).toBe(true);
    expect(await call(replica.client, 'GetFile', { owner, file_id: info.id })).toEqual(info);
  });

  it('lists newest first, a page at a time, and deletes', async () => {
    const owner = newOwner();
    const files: FileInfoOutput[] = [];
    for (let index = 0; index < 3; index += 1) files.push(await upload(replica.client, owner, batchFile([`a${index}`]), { filename: `f${index}.jsonl` }));
    const first = await call<ListFilesResponseOutput>(replica.client, 'ListFiles', { owner, limit: 2 });
    expect(first.files.map((file) => file.id)).toEqual([files[2]!.id, files[1]!.id]);
    expect(first.has_more).toBe(true);
    const second = await call<ListFilesResponseOutput>(replica.client, 'ListFiles', { owner, limit: 2, after: files[1]!.id });
    expect(second.files.map((file) => file.id)).toEqual([files[0]!.id]);
    expect(second.has_more ?? false).toBe(false);
    expect(await call(replica.client, 'DeleteFile', { owner, file_id: files[1]!.id })).toEqual({ file_id: files[1]!.id });
    const error = await rejectedWith(GatewayError, call(replica.client, 'GetFile', { owner, file_id: files[1]!.id }));
    expect(error.code).toBe(GrpcStatus.NOT_FOUND);
    const rest = await call<ListFilesResponseOutput>(replica.client, 'ListFiles', { owner });
    expect(rest.files.map((file) => file.id)).toEqual([files[2]!.id, files[0]!.id]);
  });

  it("answers NOT_FOUND for another key's file", async () => {
    const owner = newOwner();
    const other = newOwner();
    const info = await upload(replica.client, owner, batchFile(['mine']));
    for (const method of ['GetFile', 'DeleteFile'])
      expect((await rejectedWith(GatewayError, call(replica.client, method, { owner: other, file_id: info.id }))).code).toBe(GrpcStatus.NOT_FOUND);
    expect((await rejectedWith(GatewayError, readFile(replica.client, other, info.id))).code).toBe(GrpcStatus.NOT_FOUND);
    expect((await call<ListFilesResponseOutput>(replica.client, 'ListFiles', { owner: other })).files).toEqual([]);
    expect((await call<FileInfoOutput>(replica.client, 'GetFile', { owner, file_id: info.id })).id).toBe(info.id);
  });

  const good = (id: string) => JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'sim-mini', messages: [] } });
  const malformed: Array<[string, string, RegExp]> = [
    ['bad JSON', `${good('a')}\n{"custom_id": "b",\n`, /^Line 2 of the file: not valid JSON/],
    [
      'a missing custom_id',
      `${good('a')}\n\n${JSON.stringify({ method: 'POST', url: '/v1/chat/completions', body: {} })}`,
      /^Line 3 of the file: `custom_id` is missing/,
    ],
    ['a duplicate custom_id', `${good('a')}\n${good('b')}\n${good('a')}`, /^Line 3 of the file: `custom_id` "a" is used by an earlier line/],
    [
      'a wrong url',
      `${good('a')}\n${JSON.stringify({ custom_id: 'b', method: 'POST', url: '/v1/images', body: {} })}`,
      /^Line 2 of the file: `url` must be one of/,
    ],
    ['too many lines', Array.from({ length: 501 }, (_, index) => good(`l${index}`)).join('\n'), /^Line 501 of the file: the file has more than 500 requests/],
  ];

  it.each(malformed)('refuses a batch file with %s, naming the line', async (_what, content, message) => {
    const error = await rejectedWith(GatewayError, upload(replica.client, newOwner(), content));
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(error.param).toBe('file');
    expect(error.message).toMatch(message);
  });

  it('refuses a file over BATCH_MAX_FILE_BYTES, and a purpose other than batch', async () => {
    const error = await rejectedWith(GatewayError, upload(replica.client, newOwner(), Buffer.alloc(1_572_864 + 10, 0x20), { chunkBytes: 256 * 1024 }));
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(error.param).toBe('file');
    expect(error.message).toMatch(/larger than 1572864 bytes/);
    const purpose = await rejectedWith(GatewayError, upload(replica.client, newOwner(), batchFile(['a']), { purpose: 'fine-tune' }));
    expect(purpose.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(purpose.param).toBe('purpose');
  });

  it('bounds the files and the bytes a key keeps', async () => {
    const owner = newOwner();
    for (let index = 0; index < 5; index += 1) await upload(replica.client, owner, batchFile([`f${index}`]));
    const files = await rejectedWith(GatewayError, upload(replica.client, owner, batchFile(['one-more'])));
    expect([files.code, files.param]).toEqual([GrpcStatus.INVALID_ARGUMENT, 'file']);
    expect(files.message).toMatch(/keeps 5 files, the most it may \(5\)/);

    const heavy = newOwner();
    const big = batchFile(Array.from({ length: 250 }, (_, index) => `b${index}-${'y'.repeat(2_300)}`));
    await upload(replica.client, heavy, big);
    const bytes = await rejectedWith(GatewayError, upload(replica.client, heavy, big));
    expect([bytes.code, bytes.param]).toEqual([GrpcStatus.INVALID_ARGUMENT, 'file']);
    expect(bytes.message).toMatch(/over the most it may keep \(2097152\)/);
  });
});
