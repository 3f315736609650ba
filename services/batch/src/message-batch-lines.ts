/**
 * The pure parts of Anthropic's Message Batches on the batch service: the check of a batch's inline
 * requests (`{custom_id, params}` each, as POST /v1/messages/batches takes them) into lines POSTed
 * to /v1/messages, and the lines of its results file in Anthropic's form (`succeeded` with the
 * message, `errored` with Anthropic's error envelope, `canceled`, `expired`).
 */
import { GatewayError } from '@gateway/grpc';
import type { BatchLine, LineAnswer, LineError } from './batch-lines.js';

/** The url every line of an Anthropic batch is sent to. */
export const MESSAGES_URL = '/v1/messages';

/** The `api` of a batch of Anthropic's Message Batches API (POST /v1/messages/batches). */
export const ANTHROPIC_API = 'anthropic';
/** The `api` of a batch of OpenAI's Batch API. */
export const OPENAI_API = 'openai';

/** Anthropic's `custom_id`: 1 to 64 letters, digits, `_` and `-`. */
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A refusal of the request at `index` (from 0, as `requests[index]`). */
function refused(index: number, what: string): GatewayError {
  return GatewayError.of('invalid_value', `requests[${index}]: ${what}.`, { param: `requests.${index}` });
}

/**
 * The lines of a message batch from its requests as JSON Lines (one `{custom_id, params}` a line):
 * each a unique `custom_id` of Anthropic's form and an object `params`, at most `maxLines` of them.
 * The params themselves are checked when each line is sent (as Anthropic checks them, a request's
 * fault is its own `errored` result). Throws an INVALID_ARGUMENT GatewayError naming the request.
 */
export function parseMessageRequests(jsonl: string, maxLines: number): BatchLine[] {
  const lines: BatchLine[] = [];
  const seen = new Set<string>();
  for (const source of jsonl.split('\n')) {
    if (!source.trim()) continue;
    const index = lines.length;
    if (index >= maxLines)
      throw GatewayError.of('invalid_value', `\`requests\` holds more than ${maxLines} requests, the most a batch takes.`, { param: 'requests' });
    let value: unknown;
    try {
      value = JSON.parse(source);
    } catch {
      throw refused(index, 'not valid JSON');
    }
    if (!isObject(value)) throw refused(index, 'not a JSON object');
    const { custom_id: customId, params } = value;
    if (typeof customId !== 'string' || !CUSTOM_ID.test(customId)) throw refused(index, '`custom_id` must be 1 to 64 letters, digits, underscores or hyphens');
    if (seen.has(customId)) throw refused(index, `\`custom_id\` ${JSON.stringify(customId)} is used by an earlier request; each must be unique`);
    if (!isObject(params)) throw refused(index, '`params` is missing or not a JSON object');
    seen.add(customId);
    lines.push({ index, line: index + 1, customId, method: 'POST', url: MESSAGES_URL, body: params });
  }
  if (lines.length === 0) throw GatewayError.of('invalid_value', '`requests` must hold at least one request.', { param: 'requests' });
  return lines;
}

/** Where a line of an Anthropic batch ended. */
export type MessageOutcome =
  | { answer: LineAnswer }
  | { error: LineError }
  /** Never sent: the batch was cancelled, or it expired. */
  | { unsent: 'canceled' | 'expired' };

/** Anthropic's error envelope of an answer that is not one already. */
function errorEnvelope(type: string, message: string) {
  return { type: 'error', error: { type, message } };
}

/** The error of a non-2xx answer: its body when it is Anthropic's envelope, else one made of it. */
function answeredError(answer: LineAnswer): unknown {
  const body = answer.body as { type?: unknown; error?: { type?: unknown; message?: unknown } } | null;
  if (isObject(body) && body.type === 'error' && isObject(body.error) && typeof body.error.type === 'string') return body;
  const message =
    isObject(body) && isObject(body.error) && typeof body.error.message === 'string' ? body.error.message : `The request was answered ${answer.statusCode}.`;
  return errorEnvelope(answer.statusCode >= 500 ? 'api_error' : 'invalid_request_error', message);
}

/** Whether an answer is a success (2xx). */
export function succeeded(statusCode: number): boolean {
  return statusCode >= 200 && statusCode < 300;
}

/** The results file's line of a request, as Anthropic writes it. */
export function resultLine(customId: string, outcome: MessageOutcome): string {
  let result: Record<string, unknown>;
  if ('unsent' in outcome) result = { type: outcome.unsent };
  else if ('error' in outcome) result = { type: 'errored', error: errorEnvelope('api_error', outcome.error.message) };
  else if (succeeded(outcome.answer.statusCode)) result = { type: 'succeeded', message: outcome.answer.body };
  else result = { type: 'errored', error: answeredError(outcome.answer) };
  return JSON.stringify({ custom_id: customId, result });
}
