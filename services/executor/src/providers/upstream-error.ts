/**
 * Upstream failures are data, not statuses: an adapter throws an UpstreamError and the gRPC
 * boundary converts it to a GatewayError in one place (to-gateway-error.ts). Retries and fallbacks
 * (a later issue) decide on `retryable` alone, as vercel/ai's APICallError.isRetryable does.
 */

/**
 * What kind of failure it was when there is no HTTP status to say it:
 * - `http`: the upstream answered with a non-2xx status (`status` is set);
 * - `connection`: no answer (refused, reset, DNS) or the connection dropped mid-body;
 * - `timeout`: the connect, first-byte or idle timeout fired;
 * - `malformed`: a 2xx whose body is not the wire format (bad JSON, no choices);
 * - `truncated`: a stream that ended without `[DONE]` or a finish reason;
 * - `stream_error`: an error record sent inside a 2xx stream.
 */
export type UpstreamFailureKind = 'http' | 'connection' | 'timeout' | 'malformed' | 'truncated' | 'stream_error';

/** The fields of an UpstreamError. */
export interface UpstreamErrorOptions {
  provider: string;
  kind: UpstreamFailureKind;
  /** The upstream HTTP status, when the upstream answered. */
  status?: number;
  /** Whether sending the same request again may succeed. Defaults from kind and status. */
  retryable?: boolean;
  /** How long the upstream asked us to wait (retry-after-ms / retry-after). */
  retryAfterMs?: number;
  /**
   * The upstream's own error message. Only shown to the caller for 400/422 (their request was at
   * fault); it never holds our key: adapters scrub it before building the error.
   */
  upstreamMessage?: string;
  cause?: unknown;
}

/** Whether a failure of this kind and status is worth retrying: 408, 409, 429, 5xx, no answer, timeouts. */
export function isRetryable(kind: UpstreamFailureKind, status?: number): boolean {
  if (kind !== 'http') return true;
  if (status === undefined) return true;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** A failure of the upstream behind a provider adapter. */
export class UpstreamError extends Error {
  readonly provider: string;
  readonly kind: UpstreamFailureKind;
  readonly status?: number;
  readonly retryable: boolean;
  readonly retryAfterMs?: number;
  readonly upstreamMessage?: string;

  /** `message` is for logs: what failed, in our words, with no secret and no upstream header. */
  constructor(message: string, options: UpstreamErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'UpstreamError';
    this.provider = options.provider;
    this.kind = options.kind;
    this.status = options.status;
    this.retryable = options.retryable ?? isRetryable(options.kind, options.status);
    this.retryAfterMs = options.retryAfterMs;
    this.upstreamMessage = options.upstreamMessage;
  }
}
