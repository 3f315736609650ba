/**
 * A batch service as the edge's Files and Batch API tests fake it, through its own client interface:
 * its unary methods as fakeGrpcClient answers them, UploadFile as a client stream that records every
 * message (taking one message at a time, so that the edge must wait for it to drain) and answers when
 * it ends or at the message a test fails, and FileContent as a server stream of chunks or an error.
 * The keys of auth's decisions are faked here too: one key of a team, another key, a revoked one.
 */
import { Readable, Writable } from 'node:stream';
import { GatewayError, type Metadata } from '@gateway/grpc';
import type { BatchServiceClient, CheckKeyRequest, CheckKeyResponseOutput, UploadFileRequest } from '@gateway/proto';
import type { AuthDecisions } from '../clients/auth-decisions.js';
import { allowDecision } from './edge-fakes.js';
import { fakeGrpcClient, type ReceivedCall } from './test-edge.js';

/** The caller's key. */
export const BATCH_KEY = `br-${'b'.repeat(40)}`;
/** The caller's key's public id. */
export const BATCH_KEY_ID = 'key_BBBBBBBBBBBBBBBB';
/** The caller's key's team. */
export const BATCH_TEAM_ID = 'team_TTTTTTTTTTTTTTTT';
/** Another key, of no team. */
export const OTHER_KEY = `br-${'o'.repeat(40)}`;
/** The other key's public id. */
export const OTHER_KEY_ID = 'key_OOOOOOOOOOOOOOOO';
/** A key auth says was revoked. */
export const REVOKED_KEY = `br-${'r'.repeat(40)}`;

/** Auth's decisions on the keys above (any other key is unknown), each key only checked. */
export function batchKeyDecisions(checks: CheckKeyRequest[] = []): AuthDecisions {
  return {
    call: async (_method: string, request: CheckKeyRequest): Promise<CheckKeyResponseOutput> => {
      checks.push(request);
      if (request.api_key === BATCH_KEY) return allowDecision(BATCH_KEY_ID, { team_id: BATCH_TEAM_ID });
      if (request.api_key === OTHER_KEY) return allowDecision(OTHER_KEY_ID);
      if (request.api_key === REVOKED_KEY)
        return { decision: 'DECISION_DENY_INVALID_KEY', deny_reason: 'DENY_REASON_REVOKED', key_id: 'key_RRRRRRRRRRRRRRRR' } as CheckKeyResponseOutput;
      return { decision: 'DECISION_DENY_INVALID_KEY', deny_reason: 'DENY_REASON_UNKNOWN_KEY' } as CheckKeyResponseOutput;
    },
  } as unknown as AuthDecisions;
}

/** A GatewayError as grpc-js hands a service's error to its caller: its status and its ErrorInfo trailer. */
export function serviceError(error: GatewayError): Error {
  return Object.assign(new Error(error.message), error.toServiceError());
}

/** What the fake answers an upload with, from the messages it received; an Error fails it. */
export type UploadAnswer = (messages: UploadFileRequest[]) => unknown;

/** How the fake batch service behaves: its unary answers, its uploads and its file contents. */
export interface FakeBatchOptions {
  /** Unary methods' answers, as fakeGrpcClient takes them. */
  unary?: Record<string, unknown>;
  /** The answer to an upload once it ended; by default a kept file of its bytes. */
  upload?: UploadAnswer;
  /** An upload fails with this as soon as a message holding `failOn.bytes` arrives. */
  failOn?: { bytes: string; error: GatewayError };
  /** FileContent's chunks, or its error. */
  content?: (request: Record<string, unknown>) => Buffer[] | GatewayError;
}

/** Every upload the fake received: its messages in order, and whether the edge cancelled it. */
export interface RecordedUpload {
  messages: UploadFileRequest[];
  cancelled: boolean;
  ended: boolean;
}

type Callback = (error: Error | null, response?: unknown) => void;

/** The kept file an upload answers by default. */
function keptFile(messages: UploadFileRequest[]) {
  const bytes = messages.reduce((sum, message) => sum + (message.chunk ? Buffer.from(message.chunk as Uint8Array).length : 0), 0);
  return { id: 'file-abc123', bytes, created_at: 1_700_000_000, filename: messages[0]?.start?.filename ?? '', purpose: 'batch', expires_at: 0 };
}

/** The fake batch service's client, with what it recorded: unary calls in `onCall`, uploads in `uploads`. */
export function fakeBatchService(options: FakeBatchOptions, uploads: RecordedUpload[], onCall: (call: ReceivedCall) => void = () => {}): BatchServiceClient {
  const unary = fakeGrpcClient<Record<string, unknown>>(options.unary ?? {}, onCall);
  const UploadFile = (_metadata: Metadata, _options: unknown, callback: Callback) => {
    const upload: RecordedUpload = { messages: [], cancelled: false, ended: false };
    uploads.push(upload);
    let answered = false;
    const answer = (error: Error | null, response?: unknown) => {
      if (answered) return;
      answered = true;
      setImmediate(() => callback(error, response));
    };
    const stream = new Writable({
      objectMode: true,
      highWaterMark: 1,
      write(message: UploadFileRequest, _encoding, done) {
        upload.messages.push(message);
        const failOn = options.failOn;
        if (failOn && message.chunk && Buffer.from(message.chunk as Uint8Array).includes(failOn.bytes)) answer(serviceError(failOn.error));
        setImmediate(done);
      },
      final(done) {
        upload.ended = true;
        const response = (options.upload ?? keptFile)(upload.messages);
        if (response instanceof GatewayError) answer(serviceError(response));
        else if (response instanceof Error) answer(response);
        else answer(null, response);
        done();
      },
    });
    return Object.assign(stream, {
      cancel() {
        upload.cancelled = true;
        answer(serviceError(new GatewayError(1, 'cancelled', 'The request was cancelled.')));
      },
    });
  };
  const FileContent = (request: Record<string, unknown>, metadata: Metadata) => {
    onCall({ method: 'FileContent', request, metadata });
    const content = options.content?.(request) ?? [];
    const stream =
      content instanceof GatewayError
        ? new Readable({
            objectMode: true,
            read() {
              this.destroy(serviceError(content));
            },
          })
        : Readable.from(content.map((data) => ({ data })));
    return Object.assign(stream, { cancel() {} });
  };
  return { ...unary, UploadFile, FileContent } as unknown as BatchServiceClient;
}
