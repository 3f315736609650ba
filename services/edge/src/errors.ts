/**
 * The one place where failures become HTTP responses. Every error leaves in OpenAI's envelope
 * `{"error":{"message","type","param","code"}}`, with its status chosen by one table.
 */
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import { RequestError } from './wire/request-error.js';

export { RequestError, invalid, typeForStatus } from './wire/request-error.js';

/** The HTTP status of each gRPC status that a peer service can return. */
function statusForGrpc(error: GatewayError): number {
  switch (error.code) {
    case GrpcStatus.INVALID_ARGUMENT:
    case GrpcStatus.OUT_OF_RANGE:
      return 400;
    case GrpcStatus.UNAUTHENTICATED:
      return 401;
    case GrpcStatus.PERMISSION_DENIED:
      return 403;
    case GrpcStatus.NOT_FOUND:
      return 404;
    case GrpcStatus.RESOURCE_EXHAUSTED:
      return 429;
    case GrpcStatus.FAILED_PRECONDITION:
      return error.reason.startsWith('upstream_') ? 502 : 400;
    case GrpcStatus.UNAVAILABLE:
      return error.reason === 'upstream_error' ? 502 : 503;
    case GrpcStatus.DEADLINE_EXCEEDED:
      return 504;
    case GrpcStatus.CANCELLED:
      return 499;
    default:
      return 500;
  }
}

/** Converts what a peer service returned into the error the caller sees. */
export function fromGatewayError(error: GatewayError): RequestError {
  const status = statusForGrpc(error);
  const headers: Record<string, string> = {};
  if (error.retryAfterMs !== undefined && error.retryAfterMs > 0) {
    headers['retry-after'] = String(Math.max(1, Math.ceil(error.retryAfterMs / 1000)));
    headers['retry-after-ms'] = String(error.retryAfterMs);
  } else if (status === 503) {
    // A service that is down (restarting, redeploying) usually answers again within a second.
    headers['retry-after'] = '1';
  }
  const message = status === 500 ? 'The gateway failed to handle the request.' : error.message;
  return new RequestError(status, message, { code: error.reason, param: error.param ?? null, headers });
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
