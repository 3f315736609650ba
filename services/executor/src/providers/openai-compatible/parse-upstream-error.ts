/**
 * Error parsing: an upstream's non-2xx answer, or a transport failure, -> UpstreamError. Nothing
 * here keeps a header or our key: the upstream's error.message is kept (it is only shown to the
 * caller for 400/422), with every secret we sent replaced. The parts every HTTP adapter shares
 * (retry hints, scrubbing, transport failures) live in ../upstream-http.ts and are re-exported here.
 */
import type { UpstreamError } from '../upstream-error.js';
import { httpUpstreamError, upstreamMessageOf, type ErrorResponse } from '../upstream-http.js';
import type { OpenAiError } from './wire-types.js';

export { MAX_ERROR_BODY_CHARS, parseRetryAfter, scrubSecrets, upstreamErrorFromTransport, type ResponseHeaders } from '../upstream-http.js';

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
export function upstreamErrorFromResponse(provider: string, response: ErrorResponse, secrets: readonly string[]): UpstreamError {
  return httpUpstreamError(provider, response, { message: upstreamMessageOf(errorMessageOf(response.bodyText), secrets) });
}
