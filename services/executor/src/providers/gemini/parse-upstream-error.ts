/**
 * Error parsing: Google's error envelope `{ "error": { "code", "message", "status", "details" } }`
 * (a google.rpc.Status; streamGenerateContent may wrap it in an array), sent with a non-2xx status
 * or inside a 200 stream -> UpstreamError.
 *
 * - 429 RESOURCE_EXHAUSTED carries its wait in a google.rpc.RetryInfo detail (`"retryDelay":
 *   "12s"`), preferred to a retry-after header;
 * - 500 INTERNAL, 503 UNAVAILABLE, 504 DEADLINE_EXCEEDED are retryable; 400 INVALID_ARGUMENT is
 *   the caller's (its message is kept, scrubbed of our key);
 * - Gemini reports a wrong key as 400 INVALID_ARGUMENT with the ErrorInfo reason API_KEY_INVALID:
 *   that is our misconfiguration, not the caller's, so it is reported as a 401 (and its message
 *   stays in the log).
 */
import { UpstreamError, isRetryable } from '../upstream-error.js';
import { httpUpstreamError, upstreamMessageOf, type ErrorResponse } from '../upstream-http.js';
import type { GeminiError } from './wire-types.js';

/** ErrorInfo reasons that mean the gateway's key is wrong, whatever status they came with. */
const KEY_REASONS = new Set(['API_KEY_INVALID', 'API_KEY_EXPIRED', 'API_KEY_SERVICE_BLOCKED']);

/** The google.rpc.Status of an error body, whether bare (`{error}`) or in an array (`[{error}]`). */
export function geminiErrorOf(bodyText: string): GeminiError | undefined {
  try {
    const parsed = JSON.parse(bodyText) as unknown;
    const body = (Array.isArray(parsed) ? parsed[0] : parsed) as { error?: unknown } | undefined;
    if (typeof body === 'object' && body !== null && typeof body.error === 'object' && body.error !== null) return body.error as GeminiError;
  } catch {
    // Not JSON (a proxy's HTML page): there is no message to show.
  }
  return undefined;
}

/**
 * The RetryInfo detail's retryDelay in milliseconds: a google.protobuf.Duration, in JSON a string
 * of seconds with an `s` ("12s", "0.5s"), or `{ seconds, nanos }`.
 */
export function retryDelayOf(error: GeminiError | undefined): number | undefined {
  const info = error?.details?.find((detail) => typeof detail['@type'] === 'string' && detail['@type'].endsWith('google.rpc.RetryInfo'));
  const delay = info?.retryDelay as unknown;
  if (typeof delay === 'string') {
    const match = /^(\d+(?:\.\d+)?)s$/.exec(delay.trim());
    return match ? Math.ceil(Number(match[1]) * 1000) : undefined;
  }
  if (typeof delay === 'object' && delay !== null) {
    const { seconds, nanos } = delay as { seconds?: number | string; nanos?: number };
    const milliseconds = Number(seconds ?? 0) * 1000 + Number(nanos ?? 0) / 1e6;
    return Number.isFinite(milliseconds) ? Math.ceil(milliseconds) : undefined;
  }
  return undefined;
}

function isKeyFailure(error: GeminiError | undefined): boolean {
  return (error?.details ?? []).some((detail) => typeof detail.reason === 'string' && KEY_REASONS.has(detail.reason));
}

/** An UpstreamError for a non-2xx answer, with the retry hint of a 429 or 503. */
export function upstreamErrorFromResponse(provider: string, response: ErrorResponse, secrets: readonly string[]): UpstreamError {
  const error = geminiErrorOf(response.bodyText);
  return httpUpstreamError(provider, response, {
    type: error?.status,
    message: upstreamMessageOf(error?.message, secrets),
    status: isKeyFailure(error) ? 401 : undefined,
    retryAfterMs: retryDelayOf(error),
  });
}

/** An UpstreamError for an error record inside a 200 stream; retryable unless its code says otherwise. */
export function streamErrorOf(provider: string, error: GeminiError, secrets: readonly string[] = []): UpstreamError {
  const status = typeof error.code === 'number' && error.code >= 400 && error.code <= 599 ? error.code : undefined;
  const upstreamMessage = upstreamMessageOf(error.message, secrets);
  return new UpstreamError(`upstream sent an error inside the stream${error.status ? ` (${error.status})` : ''}: ${upstreamMessage ?? 'no message'}`, {
    provider,
    kind: 'stream_error',
    status,
    retryable: status === undefined ? true : isRetryable('http', status),
    retryAfterMs: retryDelayOf(error),
    upstreamMessage,
  });
}
