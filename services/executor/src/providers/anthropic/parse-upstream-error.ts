/**
 * Error parsing: Anthropic's error envelope `{ "type": "error", "error": { "type", "message" } }`,
 * sent with a non-2xx status or as an `error` event inside a 200 stream -> UpstreamError.
 * Retryable: 429 (rate_limit_error, with its retry-after), 500 (api_error), 529 (overloaded_error)
 * and any other 5xx; the upstream message is kept (shown to the caller only for 400/422) with our
 * key replaced.
 */
import { UpstreamError, isRetryable } from '../upstream-error.js';
import { httpUpstreamError, upstreamMessageOf, type ErrorResponse } from '../upstream-http.js';
import type { AnthropicError } from './wire-types.js';

/**
 * The HTTP status each documented error type is sent with, for error events inside a stream,
 * which carry no status of their own.
 */
const STATUS_OF_ERROR_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** The `error` object of an Anthropic error envelope, if the body is one. */
export function anthropicErrorOf(bodyText: string): AnthropicError | undefined {
  try {
    const body = JSON.parse(bodyText) as { type?: unknown; error?: unknown };
    if (typeof body === 'object' && body !== null && typeof body.error === 'object' && body.error !== null) return body.error as AnthropicError;
  } catch {
    // Not JSON (a proxy's HTML page): there is no message to show.
  }
  return undefined;
}

/** An UpstreamError for a non-2xx answer, with the retry-after of a 429 or 529. */
export function upstreamErrorFromResponse(provider: string, response: ErrorResponse, secrets: readonly string[]): UpstreamError {
  const error = anthropicErrorOf(response.bodyText);
  return httpUpstreamError(provider, response, { type: error?.type, message: upstreamMessageOf(error?.message, secrets) });
}

/**
 * An UpstreamError for an `error` event inside a stream: its status is the one its type is
 * documented with (overloaded_error 529, api_error 500, ...), and it is retryable when that status
 * is; an unknown type is treated as a server failure.
 */
export function streamErrorOf(provider: string, error: AnthropicError | undefined, secrets: readonly string[] = []): UpstreamError {
  const status = error?.type ? STATUS_OF_ERROR_TYPE[error.type] : undefined;
  const upstreamMessage = upstreamMessageOf(error?.message, secrets);
  return new UpstreamError(`upstream sent an error event${error?.type ? ` (${error.type})` : ''}: ${upstreamMessage ?? 'no message'}`, {
    provider,
    kind: 'stream_error',
    status,
    retryable: status === undefined ? true : isRetryable('http', status),
    upstreamMessage,
  });
}
