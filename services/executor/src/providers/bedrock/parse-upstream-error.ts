/**
 * Error parsing: Bedrock answers a failure with an HTTP status, its error type in the
 * `x-amzn-errortype` header (`ThrottlingException:http://internal.amazon.com/...`) and a JSON body
 * `{ "message": ... }`; inside a 200 ConverseStream it sends an exception message whose
 * `:exception-type` names the type. Both become UpstreamErrors by one table of types -> statuses,
 * following the gateway's rules:
 * - ValidationException (400): the caller's request, shown to the caller (400);
 * - ThrottlingException and ServiceQuotaExceededException (429): an overload, retried, then 503
 *   with Retry-After once spent (Bedrock's quota errors come as 400 or 429 depending on the
 *   quota; both are overloads, not the caller's fault);
 * - ServiceUnavailableException (503), ModelNotReadyException (429 from Bedrock: the model is
 *   still loading) and InternalServerException (500): the model cannot serve now (503);
 * - ModelTimeoutException (408): retried as a server failure;
 * - AccessDeniedException, UnrecognizedClientException, InvalidSignatureException and
 *   ExpiredTokenException (403), ResourceNotFoundException (404): the gateway's credentials, model
 *   access or model id are wrong, an answer the gateway cannot use (502), never the caller's fault;
 * - ModelErrorException and ModelStreamErrorException (424): the model failed mid-answer (502).
 * The upstream message is kept (shown to the caller only for 400) with our secrets replaced.
 */
import { UpstreamError, isRetryable } from '../upstream-error.js';
import { headerValue, httpUpstreamError, upstreamMessageOf, type ErrorResponse } from '../upstream-http.js';
import type { BedrockErrorBody } from './wire-types.js';

/** The status each error type counts as (what Bedrock documents, overloads and loading models as 429 and 503). */
const STATUS_OF_ERROR_TYPE: Readonly<Record<string, number>> = {
  ValidationException: 400,
  AccessDeniedException: 403,
  UnrecognizedClientException: 403,
  InvalidSignatureException: 403,
  ExpiredTokenException: 403,
  ResourceNotFoundException: 404,
  ModelTimeoutException: 408,
  ModelErrorException: 424,
  ModelStreamErrorException: 424,
  ThrottlingException: 429,
  ServiceQuotaExceededException: 429,
  InternalServerException: 500,
  ModelNotReadyException: 503,
  ServiceUnavailableException: 503,
};

/** The error type named by `x-amzn-errortype` (or a body's `__type`), without its namespace and URL parts. */
export function errorTypeOf(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const withoutUrl = raw.split(':')[0] ?? raw;
  return withoutUrl.split('#').at(-1)?.trim() || undefined;
}

function bodyOf(bodyText: string): (BedrockErrorBody & { __type?: string }) | undefined {
  try {
    const body = JSON.parse(bodyText) as unknown;
    return typeof body === 'object' && body !== null ? (body as BedrockErrorBody & { __type?: string }) : undefined;
  } catch {
    // Not JSON (a proxy's page): there is no message to show.
    return undefined;
  }
}

/** An UpstreamError for a non-2xx answer, with the status its type counts as and the retry-after of a 429. */
export function upstreamErrorFromResponse(provider: string, response: ErrorResponse, secrets: readonly string[]): UpstreamError {
  const body = bodyOf(response.bodyText);
  const type = errorTypeOf(headerValue(response.headers, 'x-amzn-errortype')) ?? errorTypeOf(body?.__type);
  const status = type === undefined ? undefined : STATUS_OF_ERROR_TYPE[type];
  return httpUpstreamError(provider, response, { type, message: upstreamMessageOf(body?.message ?? body?.Message, secrets), status });
}

/** An UpstreamError for an exception message inside a ConverseStream answer. */
export function streamErrorOf(provider: string, type: string, payload: unknown, secrets: readonly string[] = []): UpstreamError {
  const status = STATUS_OF_ERROR_TYPE[type] ?? STATUS_OF_ERROR_TYPE[type.charAt(0).toUpperCase() + type.slice(1)];
  const body = (typeof payload === 'object' && payload !== null ? payload : {}) as BedrockErrorBody;
  const upstreamMessage = upstreamMessageOf(body.message ?? body.Message, secrets);
  return new UpstreamError(`upstream sent an exception (${type || 'no type'}): ${upstreamMessage ?? 'no message'}`, {
    provider,
    kind: 'stream_error',
    status,
    retryable: status === undefined ? true : isRetryable('http', status),
    upstreamMessage,
  });
}
