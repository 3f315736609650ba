/**
 * The BatchService handlers: uploads (a client stream, bounded by BATCH_MAX_FILE_BYTES as it
 * arrives, a batch file checked line by line before it is kept), file reads (the bytes streamed in
 * chunks of 64 KiB), and the batches (OpenAI's from a file, Anthropic's message batches from their
 * inline requests). A database that does not answer is UNAVAILABLE
 * (`store_unavailable`); anything else unexpected is reported and INTERNAL.
 */
import type * as grpc from '@grpc/grpc-js';
import { GatewayError, toGatewayError, unary } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { BatchServiceHandlers, FileChunk, FileInfo, FileContentRequestOutput, UploadFileRequestOutput, UploadStartOutput } from '@gateway/proto';
import type pg from 'pg';
import { parseBatchFile } from './batch-lines.js';
import { cancelBatch, type CreateOptions, createBatch, createMessageBatch, deleteBatch, getBatch, listBatches } from './batch-store.js';
import { describeError, type DatabaseWatch } from './database.js';
import { deleteFile, type FileBounds, fileBytes, getFile, insertFile, listFiles } from './file-store.js';

/** The chunks a file's bytes are streamed in. */
const CHUNK_BYTES = 64 * 1024;
/** The bytes read from the database at once while streaming a file. */
const WINDOW_BYTES = 16 * CHUNK_BYTES;

/** What the handlers work with. */
export interface BatchServiceOptions extends CreateOptions {
  pool: pg.Pool;
  logger: Logger;
  watch: DatabaseWatch;
  bounds: FileBounds;
  maxFileBytes: number;
  /** A batch was created here: its lines can start at once. */
  onCreated(): void;
}

/** The handlers of gateway.batch.v1.BatchService. */
export function createBatchService(options: BatchServiceOptions): BatchServiceHandlers {
  const { pool, logger, watch } = options;
  const report = (error: unknown, method: string) => logger.error({ err: describeError(error), method }, 'a batch call failed unexpectedly');
  /** A GatewayError as it is; a database error (it has a code, or the connection went) as store_unavailable. */
  const failure = (error: unknown, method: string): GatewayError => {
    if (error instanceof GatewayError) return error;
    const { code, message = '' } = (error ?? {}) as { code?: unknown; message?: string };
    if (typeof code === 'string' || /connection|timeout|terminated/i.test(message)) {
      watch.failed(error);
      return GatewayError.of('store_unavailable', 'The batch store (PostgreSQL) does not answer; try again.', { cause: error });
    }
    return toGatewayError(error, method, report);
  };
  const call = <Request, Response>(method: string, handler: (request: Request) => Promise<Response>) =>
    unary<Request, Response>(
      (request) =>
        handler(request).catch((error: unknown) => {
          throw failure(error, method);
        }),
      method,
      report,
    );
  return {
    UploadFile: (stream, callback) => upload(stream, callback, { ...options, failure }),
    GetFile: call('GetFile', (request) => getFile(pool, request.owner, request.file_id ?? '')),
    ListFiles: call('ListFiles', (request) =>
      listFiles(pool, request.owner, { purpose: request.purpose ?? '', limit: request.limit ?? 0, after: request.after ?? '' }),
    ),
    DeleteFile: call('DeleteFile', async (request) => {
      await deleteFile(pool, request.owner, request.file_id ?? '');
      return { file_id: request.file_id ?? '' };
    }),
    FileContent: (stream) => {
      // grpc-js sends an error the stream emits as its status, then ends it.
      streamFile(pool, stream).catch((error: unknown) => stream.emit('error', failure(error, 'FileContent').toStreamError()));
    },
    CreateBatch: call('CreateBatch', async (request) => {
      const batch = await createBatch(pool, request, options);
      logger.info({ batch_id: batch.id, key_id: request.owner?.key_id, lines: batch.request_counts?.total }, 'batch created');
      options.onCreated();
      return batch;
    }),
    GetBatch: call('GetBatch', (request) => getBatch(pool, request.owner, request.batch_id ?? '')),
    ListBatches: call('ListBatches', (request) =>
      listBatches(pool, request.owner, { limit: request.limit ?? 0, after: request.after ?? '', before: request.before ?? '', api: request.api ?? '' }),
    ),
    CancelBatch: call('CancelBatch', async (request) => {
      const batch = await cancelBatch(pool, request.owner, request.batch_id ?? '');
      options.onCreated();
      return batch;
    }),
    CreateMessageBatch: call('CreateMessageBatch', async (request) => {
      const batch = await createMessageBatch(pool, request, options);
      logger.info({ batch_id: batch.id, key_id: request.owner?.key_id, lines: batch.request_counts?.total }, 'message batch created');
      options.onCreated();
      return batch;
    }),
    DeleteBatch: call('DeleteBatch', async (request) => {
      await deleteBatch(pool, request.owner, request.batch_id ?? '');
      return { batch_id: request.batch_id ?? '' };
    }),
  };
}

/**
 * One upload: the `start` message, then chunks, never more than maxFileBytes of them held (past
 * it the call is refused at once); at the end a batch file is checked and the file kept.
 */
function upload(
  stream: grpc.ServerReadableStream<UploadFileRequestOutput, FileInfo>,
  callback: grpc.sendUnaryData<FileInfo>,
  options: BatchServiceOptions & { failure: (error: unknown, method: string) => GatewayError },
): void {
  let start: UploadStartOutput | undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  let settled = false;
  const settle = (error: unknown, info?: FileInfo) => {
    if (settled) return;
    settled = true;
    chunks.length = 0;
    if (error) callback(options.failure(error, 'UploadFile').toServiceError());
    else callback(null, info);
  };
  const refuse = (message: string, param = 'file') => settle(GatewayError.of('invalid_value', message, { param }));
  stream.on('data', (message: UploadFileRequestOutput) => {
    if (settled) return;
    if (!start) {
      if (message.part !== 'start' || !message.start) return refuse('The first message of an upload must name the file (`start`).');
      start = message.start;
      if (start.purpose !== 'batch') return refuse('`purpose` must be "batch", the only files the gateway keeps.', 'purpose');
      if (!start.filename) return refuse('The upload names no file name.');
      return;
    }
    if (message.part !== 'chunk' || !message.chunk) return refuse('Every message after the first must carry bytes of the file (`chunk`).');
    size += message.chunk.length;
    if (size > options.maxFileBytes) return refuse(`The file is larger than ${options.maxFileBytes} bytes, the most the gateway keeps.`);
    chunks.push(message.chunk);
  });
  stream.on('error', () => settle(GatewayError.of('cancelled', 'The upload was cancelled.')));
  stream.on('end', () => {
    if (settled) return;
    if (!start) return refuse('The upload names no file (`start`).');
    const content = Buffer.concat(chunks);
    const owner = start.owner;
    const file = { owner: owner ?? { key_id: '', team_id: '' }, filename: start.filename ?? '', purpose: start.purpose ?? '', content };
    Promise.resolve()
      .then(() => {
        parseBatchFile(content, options.maxLines);
        return insertFile(options.pool, file, options.bounds);
      })
      .then(
        (info) => settle(undefined, info),
        (error: unknown) => settle(error),
      );
  });
}

/** Streams a file of the caller's key in 64 KiB chunks, reading a window of it at a time, as fast as the caller reads. */
async function streamFile(pool: pg.Pool, stream: grpc.ServerWritableStream<FileContentRequestOutput, FileChunk>): Promise<void> {
  const id = stream.request.file_id ?? '';
  const info = await getFile(pool, stream.request.owner, id);
  const total = Number(info.bytes);
  for (let offset = 0; offset < total; offset += WINDOW_BYTES) {
    const window = await fileBytes(pool, id, offset, WINDOW_BYTES);
    for (let at = 0; at < window.length; at += CHUNK_BYTES) {
      if (stream.cancelled) return;
      if (!stream.write({ data: window.subarray(at, at + CHUNK_BYTES) }))
        await new Promise<void>((resolve) => {
          const done = () => {
            stream.off('drain', done);
            stream.off('cancelled', done);
            resolve();
          };
          stream.on('drain', done);
          stream.on('cancelled', done);
        });
    }
  }
  stream.end();
}
