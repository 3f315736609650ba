/**
 * The one place where failures become HTTP responses. Every error leaves in OpenAI's envelope
 * `{"error":{"message","type","param","code"}}`: a peer's GatewayError with the HTTP status and
 * OpenAI type of its reason in the registry (@gateway/grpc's ERROR_REASONS), the edge's own
 * refusals as they are thrown.
 */
import { errorReason, GatewayError, httpStatusOf } from '@gateway/grpc';
import { retryAfterHeaders, retrySoonHeaders } from './rate-limit-headers.js';
import { RequestError } from './request-error.js';

export { RequestError, invalid, typeForStatus } from './request-error.js';

/** Converts what a peer service returned into the error the caller sees. */
export function fromGatewayError(error: GatewayError): RequestError {
  // The registry of reasons decides (ERROR_REASONS); a reason it does not know, from a peer of
  // another version, falls back on its gRPC status.
  const status = httpStatusOf(error);
  // A peer's retry_after_ms is an int64: whole milliseconds, as retryAfterHeaders writes them.
  const retryAfterMs = error.retryAfterMs ?? 0;
  const headers = retryAfterMs > 0 ? retryAfterHeaders(retryAfterMs) : status === 503 ? retrySoonHeaders() : {};
  const message = status === 500 ? 'The gateway failed to handle the request.' : error.message;
  return new RequestError(status, message, { code: error.reason, type: errorReason(error.reason)?.type, param: error.param ?? null, headers });
}

/** Any thrown value as a RequestError; unknown failures are a 500 whose cause is logged, not shown. */
export function toRequestError(error: unknown): RequestError {
  if (error instanceof RequestError) return error;
  if (error instanceof GatewayError) return fromGatewayError(error);
  return new RequestError(500, 'The gateway failed to handle the request.', { code: 'internal_error' });
}

/** Whether sending the same request again can help; official clients stop retrying on `x-should-retry: false`. */
export function shouldRetry(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** The JSON body of an error. */
export function errorBody(error: RequestError): string {
  return JSON.stringify({ error: { message: error.message, type: error.type, param: error.param, code: error.code } });
}
