/**
 * POST /v1/files's body, streamed: the multipart form's `file` part is written to the batch
 * service's UploadFile stream as it arrives (the first message names the owner, the file and its
 * purpose, every later one carries the next bytes, at most CHUNK_BYTES), each write waiting for the
 * stream to drain, so that no file is ever held whole in the edge's memory. The form's fields may come in any order
 * (the openai SDK sends `file` before `purpose`): a file that arrives first is streamed as a batch
 * file, the only purpose the gateway keeps, and its upload is cancelled (nothing kept) when the
 * purpose then turns out to be missing or another one. A file past EDGE_MAX_FILE_BYTES (the
 * multipart parser's file size limit) is a 413; the upload is cancelled then too.
 */
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { callMetadata, withoutCallerStack } from '@gateway/grpc';
import type { BatchServiceClient, FileInfoOutput, UploadFileRequest } from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { edgeError } from '../../error-codes.js';
import type { RequestError } from '../../errors.js';
import { type BatchCaller, batchFailure } from './batch-calls.js';

/** The purpose of every file the gateway keeps from an upload. */
export const BATCH_PURPOSE = 'batch';

/** The most bytes one UploadFile message carries: a part's larger pieces are split. */
export const CHUNK_BYTES = 64 * 1024;

/** The multipart parser's bounds of POST /v1/files besides the file's size: one file, a few small fields. */
export const FORM_LIMITS = { files: 1, fields: 16, fieldSize: 64 * 1024, parts: 32 } as const;

type UploadCall = ReturnType<BatchServiceClient['UploadFile']>;

/** The 413 of a file past the edge's bound. */
export function fileTooLarge(limit: number): RequestError {
  return edgeError('request_too_large', `The file is too large: the limit is ${limit} bytes.`, { param: 'file' });
}

/** The 400 of a purpose the gateway does not keep. */
function purposeRefused(purpose: string): RequestError {
  return edgeError('invalid_value', `Invalid value for 'purpose': the gateway keeps files of purpose 'batch' only, not '${purpose.slice(0, 64)}'.`, {
    param: 'purpose',
  });
}

/** One upload to the batch service, started with its first message. */
class Upload {
  private readonly call: UploadCall;
  private readonly result: Promise<FileInfoOutput>;
  /** Rejects when the call fails before it ends: what a wait for the stream to drain races. */
  private readonly failed: Promise<never>;
  private failure: unknown;

  constructor(deps: EdgeDependencies, request: FastifyRequest, caller: BatchCaller, filename: string) {
    const { metadata, callOptions } = callMetadata({ deadlineMs: deps.config.EDGE_COMPLETION_DEADLINE_MS, requestId: request.id });
    let call: UploadCall | undefined;
    this.result = new Promise<FileInfoOutput>((resolve, reject) => {
      call = withoutCallerStack(() =>
        caller.batch.UploadFile(metadata, callOptions, (error, info) => {
          if (error) {
            this.failure = error;
            reject(error);
          } else resolve(info ?? {});
        }),
      );
    });
    this.failed = this.result.then(() => new Promise<never>(() => {}));
    // The outcome is read by finish(), or by nobody once the upload is cancelled.
    this.result.catch(() => {});
    this.failed.catch(() => {});
    this.call = call!;
    this.write({ start: { owner: caller.owner, filename, purpose: BATCH_PURPOSE } });
  }

  /** Whether the batch service ended the call with an error already (a refused line, a bound of the key). */
  private get hasFailed(): boolean {
    return this.failure !== undefined;
  }

  private write(message: UploadFileRequest): boolean {
    return this.call.write(message);
  }

  /** Sends the file's bytes as they arrive; throws when the batch service refused the file on the way. */
  async send(file: Readable): Promise<void> {
    for await (const piece of file as AsyncIterable<Buffer>) {
      for (let start = 0; start < piece.length && !this.hasFailed; start += CHUNK_BYTES) {
        const chunk = piece.subarray(start, start + CHUNK_BYTES);
        if (!this.write({ chunk })) await Promise.race([once(this.call, 'drain'), this.failed]);
      }
      if (this.hasFailed) break;
    }
    if (this.hasFailed) await this.result;
  }

  /** Ends the upload and resolves with the kept file. */
  finish(): Promise<FileInfoOutput> {
    this.call.end();
    return this.result;
  }

  /** Gives the upload up: the batch service keeps nothing of it. */
  cancel(): void {
    this.call.cancel();
  }
}

/** A failure of reading the form as the error to send: the file's size, the form's bounds, a malformed body. */
function formFailure(error: unknown, fileLimit: number): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return fileTooLarge(fileLimit);
  if (code === 'FST_FILES_LIMIT') return edgeError('invalid_body', "Send one file, in the form field 'file'.", { param: 'file' });
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') return edgeError('invalid_body', `The form has too many fields: send 'purpose' and 'file'.`);
  if (typeof status === 'number' && status >= 400 && status < 500)
    return edgeError('invalid_body', `The multipart form could not be read: ${String((error as Error).message).slice(0, 200)}.`);
  return error;
}

/**
 * Reads POST /v1/files's multipart form and streams its file to the batch service; resolves with the
 * kept file. Throws the 400 of a missing or refused `purpose`, of a missing `file`, the 413 of a file
 * past EDGE_MAX_FILE_BYTES, or what the batch service refused.
 */
export async function uploadFile(deps: EdgeDependencies, request: FastifyRequest, caller: BatchCaller): Promise<FileInfoOutput> {
  if (!request.isMultipart()) throw edgeError('unsupported_media_type', "Send the file as multipart/form-data, with the fields 'purpose' and 'file'.");
  const fileLimit = deps.config.EDGE_MAX_FILE_BYTES;
  let purpose: string | undefined;
  let upload: Upload | undefined;
  try {
    for await (const part of request.parts()) {
      if (part.type === 'field') {
        if (part.fieldname !== 'purpose') continue;
        purpose = String(part.value);
        if (purpose !== BATCH_PURPOSE) throw purposeRefused(purpose);
        continue;
      }
      if (part.fieldname !== 'file') {
        part.file.resume();
        continue;
      }
      upload = new Upload(deps, request, caller, part.filename ?? '');
      await upload.send(part.file);
      if (part.file.truncated) throw fileTooLarge(fileLimit);
    }
    if (purpose === undefined)
      throw edgeError('missing_required_parameter', "'purpose' is required: send it as a form field, with the value 'batch'.", { param: 'purpose' });
    if (!upload) throw edgeError('missing_required_parameter', "'file' is required: send the file as the form field 'file'.", { param: 'file' });
  } catch (error) {
    upload?.cancel();
    throw batchFailure(deps, formFailure(error, fileLimit), request.id);
  }
  try {
    return await upload.finish();
  } catch (error) {
    throw batchFailure(deps, error, request.id);
  }
}
