/**
 * Azure OpenAI's non-2xx answers -> UpstreamError. Its envelope is OpenAI's (message scrubbed of
 * our key, kept for the caller only on 400/422), plus the content filter: a 400 whose `code` (or
 * `innererror.code`) says the filter refused the prompt carries upstreamCode `content_filter`, which
 * the caller is answered as (400 `content_filter`, param `prompt`, as OpenAI and Azure answer it).
 * Azure's 429 asks for its wait in `retry-after-ms` and `retry-after`, read by httpUpstreamError.
 */
import { UpstreamError } from '../upstream-error.js';
import { httpUpstreamError, upstreamMessageOf, type ErrorResponse } from '../upstream-http.js';
import type { AzureErrorBody } from './wire-types.js';

/** The envelope's error, if the body is one. */
function errorOf(bodyText: string): AzureErrorBody['error'] | undefined {
  try {
    const body = JSON.parse(bodyText) as AzureErrorBody;
    return typeof body?.error === 'object' && body.error !== null ? body.error : undefined;
  } catch {
    // Not JSON (a proxy's HTML page): nothing to read.
    return undefined;
  }
}

/** An UpstreamError for a non-2xx answer of Azure OpenAI. */
export function upstreamErrorFromResponse(provider: string, response: ErrorResponse, secrets: readonly string[]): UpstreamError {
  const error = errorOf(response.bodyText);
  const message = upstreamMessageOf(error?.message, secrets);
  const filtered = response.status === 400 && (error?.code === 'content_filter' || error?.innererror?.code === 'ResponsibleAIPolicyViolation');
  const base = httpUpstreamError(provider, response, { message, ...(typeof error?.code === 'string' ? { type: error.code } : {}) });
  if (!filtered) return base;
  return new UpstreamError(base.message, { provider, kind: 'http', status: 400, upstreamMessage: message, upstreamCode: 'content_filter' });
}
