/**
 * The pure parts of a batch: the ids it hands out, the check of a batch file (JSON Lines of
 * requests, as OpenAI's Batch API takes them), the body a line is sent with, and the lines of the
 * output and error files.
 */
import { randomBytes } from 'node:crypto';
import { GatewayError } from '@gateway/grpc';

/** The endpoints a batch's lines may name, as OpenAI's Batch API offers them. */
export const BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/responses', '/v1/embeddings'] as const;

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `prefix` and 24 random letters and digits (`file-`, `batch_`, `batch_req_`). */
export function randomId(prefix: string): string {
  const bytes = randomBytes(24);
  let id = prefix;
  // 256 is 4 * 62 + 8: the bias of the modulo is a few in a thousand, harmless for an id.
  for (const byte of bytes) id += ID_ALPHABET[byte % ID_ALPHABET.length];
  return id;
}

/** One request of a batch file. */
export interface BatchLine {
  /** Its place among the file's requests, from 0. */
  index: number;
  /** Its line of the file, from 1 (empty lines counted). */
  line: number;
  customId: string;
  method: 'POST';
  url: string;
  body: Record<string, unknown>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A refusal of the file, naming the line. */
function refused(line: number, what: string): GatewayError {
  return GatewayError.of('invalid_value', `Line ${line} of the file: ${what}.`, { param: 'file' });
}

/**
 * The requests of a batch file: every non-empty line a JSON object with a `custom_id` (a string,
 * unique in the file), `method` POST, a `url` of BATCH_ENDPOINTS and an object `body`; at most
 * `maxLines` of them. Throws an INVALID_ARGUMENT GatewayError naming the line (from 1, as an
 * editor counts them) and what is wrong with it.
 */
export function parseBatchFile(content: Buffer | string, maxLines: number): BatchLine[] {
  const text = typeof content === 'string' ? content : content.toString('utf8');
  const lines: BatchLine[] = [];
  const seen = new Set<string>();
  const rows = text.split('\n');
  for (let row = 0; row < rows.length; row += 1) {
    const source = rows[row]!.trim();
    if (!source) continue;
    const number = row + 1;
    if (lines.length >= maxLines) throw refused(number, `the file has more than ${maxLines} requests, the most a batch takes`);
    let value: unknown;
    try {
      value = JSON.parse(source);
    } catch {
      throw refused(number, 'not valid JSON');
    }
    if (!isObject(value)) throw refused(number, 'not a JSON object');
    const { custom_id: customId, method, url, body } = value;
    if (typeof customId !== 'string' || customId === '') throw refused(number, '`custom_id` is missing or not a string');
    if (seen.has(customId)) throw refused(number, `\`custom_id\` ${JSON.stringify(customId)} is used by an earlier line; each must be unique`);
    if (method !== 'POST') throw refused(number, '`method` must be "POST"');
    if (typeof url !== 'string' || !(BATCH_ENDPOINTS as readonly string[]).includes(url))
      throw refused(number, `\`url\` must be one of ${BATCH_ENDPOINTS.join(', ')}`);
    if (!isObject(body)) throw refused(number, '`body` is missing or not a JSON object');
    seen.add(customId);
    lines.push({ index: lines.length, line: number, customId, method, url, body });
  }
  if (lines.length === 0) throw GatewayError.of('invalid_value', 'The file holds no requests: a batch file has one JSON request a line.', { param: 'file' });
  return lines;
}

/** The body a line is sent to the edge with: its own, never streamed (`stream` and `stream_options` removed). */
export function sentBody(body: Record<string, unknown>): Record<string, unknown> {
  const { stream: _stream, stream_options: _options, ...rest } = body;
  return rest;
}

/** A line's answer as the edge gave it. */
export interface LineAnswer {
  statusCode: number;
  requestId: string;
  body: unknown;
}

/** Why a line got no answer. */
export interface LineError {
  code: string;
  message: string;
}

/** The output file's line of an answered request, as OpenAI writes it. */
export function outputLine(customId: string, answer: LineAnswer, id = randomId('batch_req_')): string {
  return JSON.stringify({
    id,
    custom_id: customId,
    response: { status_code: answer.statusCode, request_id: answer.requestId, body: answer.body },
    error: null,
  });
}

/** The error file's line of a request that got no answer, as OpenAI writes it. */
export function errorLine(customId: string, error: LineError, id = randomId('batch_req_')): string {
  return JSON.stringify({ id, custom_id: customId, response: null, error: { code: error.code, message: error.message } });
}

/**
 * When a line that may be sent again goes next (ms from now): the `Retry-After` seconds of a 429
 * when it gives them, else `baseMs` doubled at each attempt (capped at a minute). `attempt`
 * counts from 1 (the attempt that just failed).
 */
export function retryDelayMs(attempt: number, retryAfter: string | null | undefined, baseMs: number): number {
  const seconds = retryAfter === null || retryAfter === undefined || retryAfter.trim() === '' ? Number.NaN : Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1_000, 3_600_000);
  return Math.min(baseMs * 2 ** (attempt - 1), 60_000);
}

/** Whether the edge's answer of this status is worth sending again (rate limited, a gateway in trouble). */
export function retryableStatus(status: number): boolean {
  return status === 429 || status === 502 || status === 503 || status === 504;
}
