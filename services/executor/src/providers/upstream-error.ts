/**
 * Upstream failures are data, not statuses: an adapter throws an UpstreamError and the gRPC
 * boundary converts it to a GatewayError in one place (to-gateway-error.ts). Retries and fallbacks
 * decide on `retryable` alone, as vercel/ai's APICallError.isRetryable does; once they are spent,
 * `failureClass` decides what the caller is told: that the model is unavailable (503, worth
 * retrying later) or that its upstream answered something unusable (502).
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

/**
 * What a failure says about the upstream, decided once where the failure is seen (the adapter
 * knows whether any answer came) so that nothing downstream re-derives it from kind and status:
 * - `unavailable`: the upstream could not be reached or could not serve now, so the model is
 *   unavailable for the moment: no connection (refused, reset before any answer, DNS failure), a
 *   connect or first-byte timeout, a 5xx or an overload (429, Anthropic's 529), as a status or as
 *   the error record of a stream. Once the executor's retries are spent this is
 *   UNAVAILABLE `model_unavailable` (HTTP 503 with Retry-After), and fallbacks apply.
 * - `unusable`: the upstream answered, but with something the gateway cannot use: a body that is
 *   not the wire format, a stream cut off or dropped mid-body, a stall after the headers, a 4xx
 *   that is the gateway's fault (its key, base URL or model name; 408, 409 and any unexpected
 *   4xx). This keeps its own status in the table of to-gateway-error.ts (502, 504 for stalls).
 * - `caller`: the upstream refused the request itself (400, 413, 422): the caller must change
 *   it, and is told so (400 `upstream_invalid_request`).
 */
export type UpstreamFailureClass = 'unavailable' | 'unusable' | 'caller';

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
   * What the failure says about the upstream. Defaults from kind and status (classifyFailure);
   * given where they cannot say it, e.g. a transport failure after the response headers.
   */
  failureClass?: UpstreamFailureClass;
  /**
   * The upstream's own error message. Only shown to the caller for 400/422 (their request was at
   * fault); it never holds our key: adapters scrub it before building the error.
   */
  upstreamMessage?: string;
  /**
   * The upstream's error code, where it says more than the status: `content_filter` for a prompt
   * its content filter refused (Azure OpenAI), which the caller is answered as such.
   */
  upstreamCode?: 'content_filter';
  cause?: unknown;
}

/** Whether a failure of this kind and status is worth retrying: 408, 409, 429, 5xx, no answer, timeouts. */
export function isRetryable(kind: UpstreamFailureKind, status?: number): boolean {
  if (kind !== 'http') return true;
  if (status === undefined) return true;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * The class of a failure from its kind and status alone. A `connection` or `timeout` failure is
 * taken to have come before any answer (no connection, connect or first-byte timeout); the HTTP
 * adapters say `unusable` themselves when it came after the response headers.
 */
export function classifyFailure(kind: UpstreamFailureKind, status?: number): UpstreamFailureClass {
  switch (kind) {
    case 'connection':
    case 'timeout':
      return 'unavailable';
    case 'http':
    case 'stream_error':
      // An error record of a type we do not know says nothing about availability.
      if (status === undefined) return 'unusable';
      if (status === 400 || status === 413 || status === 422) return 'caller';
      // 429 and 529 are overloads; every 5xx says the upstream cannot serve now.
      return status === 429 || status >= 500 ? 'unavailable' : 'unusable';
    case 'malformed':
    case 'truncated':
      return 'unusable';
  }
}

/** A failure of the upstream behind a provider adapter. */
export class UpstreamError extends Error {
  readonly provider: string;
  readonly kind: UpstreamFailureKind;
  readonly status?: number;
  readonly retryable: boolean;
  readonly retryAfterMs?: number;
  readonly upstreamMessage?: string;
  readonly upstreamCode?: 'content_filter';
  /** Unavailable, unusable answer, or the caller's request: see UpstreamFailureClass. */
  readonly failureClass: UpstreamFailureClass;

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
    this.upstreamCode = options.upstreamCode;
    this.failureClass = options.failureClass ?? classifyFailure(options.kind, options.status);
  }
}
