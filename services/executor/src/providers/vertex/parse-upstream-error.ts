/**
 * Error parsing for Vertex AI. Gemini on Vertex answers in the Gemini API's google.rpc.Status
 * envelope, read by providers/gemini's parser. Claude on Vertex answers in two: Anthropic's
 * envelope for what the model refused (400 invalid_request_error, 529 overloaded_error), and
 * Google's google.rpc.Status for what Vertex refused before the model (401 UNAUTHENTICATED, 403
 * PERMISSION_DENIED, 404 NOT_FOUND for a model not enabled in the project, 429
 * RESOURCE_EXHAUSTED for its quota): the envelope says which parser reads it.
 */
import { upstreamErrorFromResponse as anthropicError } from '../anthropic/parse-upstream-error.js';
import { geminiErrorOf, upstreamErrorFromResponse as googleError } from '../gemini/parse-upstream-error.js';
import type { UpstreamError } from '../upstream-error.js';
import type { ErrorResponse } from '../upstream-http.js';

/** Whether an error body is Google's google.rpc.Status (a numeric code or a status name) rather than Anthropic's envelope. */
function isGoogleStatus(bodyText: string): boolean {
  const error = geminiErrorOf(bodyText);
  return error !== undefined && (typeof error.code === 'number' || typeof error.status === 'string');
}

/** An UpstreamError for a non-2xx answer of rawPredict / streamRawPredict. */
export function upstreamErrorFromVertexAnthropic(provider: string, response: ErrorResponse, secrets: readonly string[]): UpstreamError {
  return isGoogleStatus(response.bodyText) ? googleError(provider, response, secrets) : anthropicError(provider, response, secrets);
}
