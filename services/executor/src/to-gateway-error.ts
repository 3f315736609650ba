/**
 * The one mapping from failures inside the executor to the GatewayError that leaves it. Handlers
 * call it at the gRPC boundary and nowhere else, so the status table below is the whole story.
 */
import { GatewayError } from '@gateway/grpc';
import { UpstreamError } from './providers/upstream-error.js';

/**
 * Converts an UpstreamError to its GatewayError; a GatewayError passes through; anything else
 * (a bug) is returned unchanged so that toServiceError reports it and sends a general INTERNAL.
 *
 * This is the table of ONE failure as the upstream gave it: what a stream reports when it fails
 * after its first byte, what a simulated model's directive stands for, what an upstream that
 * answered something unusable leaves as. A model whose retries were all spent on failures of
 * class `unavailable` (see UpstreamFailureClass) is not reported by this table: the pool
 * (pool/run-with-fallbacks.ts) reports it as UNAVAILABLE `model_unavailable` with a retry-after.
 *
 * | upstream failure                                   | class       | status             | reason                   |
 * |----------------------------------------------------|-------------|--------------------|--------------------------|
 * | 429                                                | unavailable | RESOURCE_EXHAUSTED | upstream_rate_limited    |
 * | 5xx, no connection before the headers              | unavailable | UNAVAILABLE        | upstream_error           |
 * | connect / first-byte timeout                       | unavailable | DEADLINE_EXCEEDED  | upstream_timeout         |
 * | idle timeout after the headers, 408                | unusable    | DEADLINE_EXCEEDED  | upstream_timeout         |
 * | malformed body, truncated or dropped stream        | unusable    | UNAVAILABLE        | upstream_error           |
 * | 400 with code content_filter (Azure)               | caller      | INVALID_ARGUMENT   | content_filter           |
 * | 400, 413, 422                                      | caller      | INVALID_ARGUMENT   | upstream_invalid_request |
 * | 401, 403, 404                                      | unusable    | FAILED_PRECONDITION| upstream_rejected        |
 * | any other 4xx                                      | unusable    | UNAVAILABLE        | upstream_error           |
 */
export function toGatewayError(error: unknown): unknown {
  if (!(error instanceof UpstreamError)) return error;
  const common = {
    provider: error.provider,
    upstreamStatus: error.status,
    retryable: error.retryable,
    retryAfterMs: error.retryAfterMs,
    cause: error,
  };
  const status = error.status;
  if (error.kind === 'timeout' || status === 408) {
    return GatewayError.of('upstream_timeout', `The ${error.provider} upstream did not answer in time.`, common);
  }
  if (status === 429) {
    return GatewayError.of('upstream_rate_limited', `The ${error.provider} upstream is rate limiting requests; retry later.`, {
      ...common,
      retryable: true,
    });
  }
  // A prompt the upstream's content filter refused: OpenAI's code, so that clients that handle it see it.
  if (error.failureClass === 'caller' && error.upstreamCode === 'content_filter') {
    const detail = error.upstreamMessage ? `: ${error.upstreamMessage}` : '.';
    return GatewayError.of('content_filter', `The ${error.provider} upstream's content filter refused the prompt${detail}`, {
      ...common,
      param: 'prompt',
      retryable: false,
    });
  }
  // 400, 413 (too large for that upstream), 422: sending the same request again cannot help.
  if (error.failureClass === 'caller') {
    const detail = error.upstreamMessage ? `: ${error.upstreamMessage}` : '.';
    return GatewayError.of('upstream_invalid_request', `The ${error.provider} upstream rejected the request${detail}`, {
      ...common,
      retryable: false,
    });
  }
  if (status === 401 || status === 403 || status === 404) {
    // The operator's key, base URL or model name is wrong: nothing the caller can fix, and the
    // upstream's own message may echo part of the key, so it stays in the log.
    return GatewayError.of('upstream_rejected', `The ${error.provider} upstream rejected the gateway's credentials or model configuration.`, {
      ...common,
      retryable: false,
    });
  }
  return GatewayError.of('upstream_error', `The ${error.provider} upstream failed to answer.`, common);
}
