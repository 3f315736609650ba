/**
 * The batch service for its tests: replicas on a test database (real gRPC, real PostgreSQL), a
 * fake edge (node:http) that checks each line's headers and answers as the gateway would, and the
 * calls the edge makes (uploads, reads, batches) as promises.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { callUnary, createClient, GatewayError } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { type BatchInfoOutput, type BatchOwner, type BatchServiceClient, type FileInfoOutput, loadGatewayGrpc } from '@gateway/proto';
import { SecretCipher } from '@gateway/redis';
import pg from 'pg';
import { type BatchApp, type BatchDependencies, createBatchApp } from '../app.js';

/** The API key every test batch is sent with, and the secrets key sealing it. */
export const API_KEY = `sk-gw-test-${randomBytes(12).toString('hex')}`;
export const SECRETS_KEY = randomBytes(32).toString('base64');

/** Every log line of the replicas, as written. */
export const logLines: string[] = [];

/** A replica: its app, pool and client. */
export interface Replica {
  app: BatchApp;
  pool: pg.Pool;
  client: BatchServiceClient;
  /** Stops it as SIGTERM does (the lane within the grace, the server), then closes its pool. */
  close(graceMs?: number): Promise<void>;
  /** Ends it at once, as a replica that dies: the lane abandoned, the server cut, the pool closed. */
  abandon(): Promise<void>;
}

/** Starts a replica on `databaseUrl`, sending lines to `edgeUrl`. */
export async function startReplica(databaseUrl: string, edgeUrl: string, overrides: Partial<BatchDependencies> = {}): Promise<Replica> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  pool.on('error', () => {});
  const logger = createLogger('batch', 'debug', {
    hooks: {
      logMethod(args) {
        logLines.push(JSON.stringify(args));
      },
    },
  });
  const app = createBatchApp({
    pool,
    cipher: new SecretCipher(SECRETS_KEY, 'BATCH_SECRETS_KEY'),
    logger,
    edgeUrl,
    laneConcurrency: 8,
    lineAttempts: 3,
    leaseMs: 10_000,
    pollIntervalMs: 50,
    maxFileBytes: 1_572_864,
    maxLines: 500,
    maxFilesPerKey: 5,
    maxBytesPerKey: 2_097_152,
    retryBaseMs: 50,
    probeIntervalMs: 200,
    ...overrides,
  });
  await app.start();
  const port = await app.server.listen('127.0.0.1:0');
  const client = createClient(loadGatewayGrpc().gateway.batch.v1.BatchService, `127.0.0.1:${port}`);
  return {
    app,
    pool,
    client,
    async close(graceMs = 1_000) {
      client.close();
      await Promise.all([app.stop(graceMs), app.server.shutdown(graceMs)]);
      await pool.end();
    },
    async abandon() {
      client.close();
      app.lane.abandon();
      app.server.server.forceShutdown();
      await pool.end().catch(() => {});
    },
  };
}

/** A key of its own for one test. */
export function newOwner(): BatchOwner {
  return { key_id: `key_${randomBytes(8).toString('hex')}`, team_id: 'team_test' };
}

const CALL = { deadlineMs: 20_000 };

/** A unary call of the service. */
export function call<Response>(client: BatchServiceClient, method: string, request: object): Promise<Response> {
  const unary = (client as unknown as Record<string, Parameters<typeof callUnary>[1]>)[method]!;
  return callUnary(client, unary, request, CALL) as Promise<Response>;
}

/** Uploads `content` in chunks of `chunkBytes`; rejects with the service's GatewayError. */
export function upload(
  client: BatchServiceClient,
  owner: BatchOwner,
  content: Buffer | string,
  options: { filename?: string; purpose?: string; chunkBytes?: number } = {},
): Promise<Required<FileInfoOutput>> {
  const bytes = Buffer.isBuffer(content) ? content : Buffer.from(content);
  return new Promise((resolve, reject) => {
    const stream = client.UploadFile((error, info) => (error ? reject(GatewayError.fromServiceError(error)) : resolve(info as Required<FileInfoOutput>)));
    stream.on('error', () => {});
    stream.write({ start: { owner, filename: options.filename ?? 'input.jsonl', purpose: options.purpose ?? 'batch' } });
    const chunk = options.chunkBytes ?? 32 * 1024;
    for (let at = 0; at < bytes.length; at += chunk) stream.write({ chunk: bytes.subarray(at, at + chunk) });
    stream.end();
  });
}

/** A file's bytes as FileContent streams them, and the sizes of its chunks. */
export function readFile(client: BatchServiceClient, owner: BatchOwner, fileId: string): Promise<{ content: Buffer; chunks: number[] }> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    const stream = client.FileContent({ owner, file_id: fileId });
    stream.on('data', (chunk: { data: Buffer }) => parts.push(chunk.data));
    stream.on('error', (error) => reject(GatewayError.fromServiceError(error)));
    stream.on('end', () => resolve({ content: Buffer.concat(parts), chunks: parts.map((part) => part.length) }));
  });
}

/** A batch file of chat completions, one line a custom id, each asking for its own id. */
export function batchFile(customIds: string[], url = '/v1/chat/completions'): string {
  return customIds
    .map((id) => JSON.stringify({ custom_id: id, method: 'POST', url, body: { model: 'sim-mini', stream: true, messages: [{ role: 'user', content: id }] } }))
    .join('\n');
}

/** Creates a batch of `fileId` for `owner`, sent with API_KEY. */
export function createBatch(
  client: BatchServiceClient,
  owner: BatchOwner,
  fileId: string,
  endpoint = '/v1/chat/completions',
): Promise<Required<BatchInfoOutput>> {
  return call(client, 'CreateBatch', { owner, api_key: API_KEY, input_file_id: fileId, endpoint, completion_window: '24h', metadata_json: '{"run":"test"}' });
}

/** One request the fake edge received. */
export interface EdgeRequest {
  customId: string;
  batchId: string;
  body: Record<string, unknown>;
}

/** How the fake edge answers a line: by default a chat completion echoing its custom id. */
export type EdgeBehaviour = (request: EdgeRequest, seenBefore: number, response: ServerResponse, incoming: IncomingMessage) => boolean | Promise<boolean>;

/** A fake edge: refuses (401) a request without API_KEY or the batch id header, answers the others as the gateway would. */
export async function startFakeEdge(behaviour: EdgeBehaviour = () => false) {
  const seen: EdgeRequest[] = [];
  const server = createServer((incoming, response) => {
    const parts: Buffer[] = [];
    incoming.on('data', (part: Buffer) => parts.push(part));
    incoming.on('end', async () => {
      const batchId = String(incoming.headers['x-gateway-batch-id'] ?? '');
      if (
        incoming.headers.authorization !== `Bearer ${API_KEY}` ||
        !/^(?:msg)?batch_/.test(batchId) ||
        incoming.headers['content-type'] !== 'application/json'
      ) {
        response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"bad key","code":"invalid_api_key"}}');
        return;
      }
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as { messages: Array<{ content: string }> };
      const customId = body.messages[0]!.content;
      const before = seen.filter((request) => request.customId === customId).length;
      const request = { customId, batchId, body };
      seen.push(request);
      if (await behaviour(request, before, response, incoming)) return;
      response.writeHead(200, { 'content-type': 'application/json', 'x-request-id': `req_${customId}` }).end(JSON.stringify(completion(customId)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The chat completion the fake edge answers for `customId`, with the gateway's own object. */
export function completion(customId: string) {
  return {
    id: `chatcmpl-${customId}`,
    object: 'chat.completion',
    model: 'sim-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: `echo ${customId}` }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    gateway: { request_id: `req_${customId}`, cache: 'miss' },
  };
}

/** A line of an output or error file (`response` is null in an error file's). */
export interface FileLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: unknown };
  error: { code: string; message: string } | null;
}

/** The JSON lines of a file's content. */
export function jsonLines(content: Buffer): FileLine[] {
  return content
    .toString('utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as FileLine);
}
