/**
 * Error parsing: an upstream's non-2xx answer, or a transport failure, -> UpstreamError. Nothing
 * here keeps a header or our key: the upstream's error.message is kept (it is only shown to the
 * caller for 400/422), with every secret we sent replaced.
 */
import { UpstreamError } from '../upstream-error.js';
import type { OpenAiError } from './wire-types.js';

/** Response headers as undici gives them. */
export type ResponseHeaders = Record<string, string | string[] | undefined>;

/** Bodies of error answers are read up to this many characters; the rest is not needed. */
export const MAX_ERROR_BODY_CHARS = 16_384;

function header(headers: ResponseHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The wait the upstream asked for: `retry-after-ms` (milliseconds, OpenAI's), else `retry-after`
 * in seconds or as an HTTP date. Undefined when absent or unreadable.
 */
export function parseRetryAfter(headers: ResponseHeaders, now = Date.now()): number | undefined {
  const milliseconds = Number.parseFloat(header(headers, 'retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return Math.ceil(milliseconds);
  const retryAfter = header(headers, 'retry-after')?.trim();
  if (!retryAfter) return undefined;
  if (/^\d+(\.\d+)?$/.test(retryAfter)) return Math.ceil(Number(retryAfter) * 1000);
  const date = Date.parse(retryAfter);
  return Number.isNaN(date) ? undefined : Math.max(date - now, 0);
}

/** Replaces each secret in a text; secrets shorter than 8 characters are not worth matching. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let scrubbed = text;
  for (const secret of secrets) if (secret.length >= 8) scrubbed = scrubbed.split(secret).join('[redacted]');
  return scrubbed;
}

/** The `error.message` of an OpenAI ErrorResponse body (or of a bare `{ message }`), if any. */
export function errorMessageOf(bodyText: string): string | undefined {
  try {
    const body = JSON.parse(bodyText) as { error?: OpenAiError | string; message?: string };
    if (typeof body.error === 'string') return body.error;
    if (typeof body.error?.message === 'string') return body.error.message;
    if (typeof body.message === 'string') return body.message;
  } catch {
    // Not JSON (a proxy's HTML page): there is no message to show.
  }
  return undefined;
}

/** An UpstreamError for a non-2xx answer. */
export function upstreamErrorFromResponse(provider: string, status: number, headers: ResponseHeaders, bodyText: string, secrets: readonly string[]): UpstreamError {
  const message = errorMessageOf(bodyText);
  const upstreamMessage = message === undefined ? undefined : scrubSecrets(message, secrets).slice(0, 1000);
  return new UpstreamError(`upstream answered ${status}${upstreamMessage ? `: ${upstreamMessage}` : ''}`, {
    provider,
    kind: 'http',
    status,
    retryAfterMs: parseRetryAfter(headers),
    upstreamMessage,
  });
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

/** An UpstreamError for a failure without an answer: undici's timeouts, refused or reset connections. */
export function upstreamErrorFromTransport(provider: string, error: unknown, phase: 'request' | 'body'): UpstreamError {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && TIMEOUT_CODES.has(code)) {
    const which = code === 'UND_ERR_CONNECT_TIMEOUT' ? 'connect' : code === 'UND_ERR_HEADERS_TIMEOUT' ? 'first-byte' : 'idle';
    return new UpstreamError(`upstream ${which} timeout`, { provider, kind: 'timeout', cause: error });
  }
  const what = phase === 'request' ? 'upstream connection failed' : 'upstream connection dropped mid-body';
  return new UpstreamError(`${what}${typeof code === 'string' ? ` (${code})` : ''}`, { provider, kind: 'connection', cause: error });
}
