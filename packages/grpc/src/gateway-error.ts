import * as grpc from '@grpc/grpc-js';
import { messageCodec, type ErrorInfo, type ErrorInfoOutput } from '@gateway/proto';
import { ERROR_REASONS, reasonOfStatus, type ErrorReason } from './error-reasons.js';

/** The binary trailer that carries a gateway.rpc.v1.ErrorInfo with every non-OK status. */
export const ERROR_TRAILER = 'gateway-error-bin';

const errorInfoCodec = messageCodec<ErrorInfo, ErrorInfoOutput>('gateway.rpc.v1.ErrorInfo');

/** What a GatewayError says beyond its status. */
export interface GatewayErrorOptions {
  param?: string;
  retryAfterMs?: number;
  retryable?: boolean;
  provider?: string;
  upstreamStatus?: number;
  cause?: unknown;
}

/**
 * The one typed failure that crosses service boundaries. Inside a service, throw it with a gRPC
 * status and a stable reason; the server wrapper turns it into a status with an ErrorInfo
 * trailer, and the client side turns that back into a GatewayError. The message is shown to the
 * caller, so it never holds a secret or an upstream body; the cause stays in the log.
 */
export class GatewayError extends Error {
  readonly code: grpc.status;
  readonly reason: string;
  readonly param?: string;
  readonly retryAfterMs?: number;
  readonly retryable: boolean;
  readonly provider?: string;
  readonly upstreamStatus?: number;

  constructor(code: grpc.status, reason: string, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.reason = reason;
    this.param = options.param;
    this.retryAfterMs = options.retryAfterMs;
    this.retryable = options.retryable ?? false;
    this.provider = options.provider;
    this.upstreamStatus = options.upstreamStatus;
  }

  /**
   * A GatewayError of a registered reason: its gRPC status, and unless options say otherwise
   * whether it is retryable, come from the registry (ERROR_REASONS), so the two never disagree.
   */
  static of(reason: ErrorReason, message: string, options: GatewayErrorOptions = {}): GatewayError {
    const entry = ERROR_REASONS[reason];
    return new GatewayError(entry.grpc, reason, message, { ...options, retryable: options.retryable ?? entry.retryable });
  }

  /** What this error says beyond its status, as the gateway.rpc.v1.ErrorInfo message. */
  toErrorInfo(): ErrorInfo {
    return {
      reason: this.reason,
      message: this.message,
      param: this.param,
      retry_after_ms: this.retryAfterMs,
      retryable: this.retryable,
      provider: this.provider,
      upstream_status: this.upstreamStatus,
    };
  }

  /** The grpc-js error object a handler passes to its callback or emits on its stream. */
  toServiceError(): Partial<grpc.StatusObject> & { message: string } {
    const metadata = new grpc.Metadata();
    metadata.set(ERROR_TRAILER, Buffer.from(errorInfoCodec.encode(this.toErrorInfo())));
    return { code: this.code, details: this.message, message: this.message, metadata };
  }

  /** The error a server stream is destroyed with (`call.destroy`): an Error carrying the status grpc-js sends. */
  toStreamError(): Error & Partial<grpc.StatusObject> {
    return Object.assign(new Error(this.message), this.toServiceError());
  }

  /**
   * Rebuilds a GatewayError from a status code and the ErrorInfo a peer sent with it (in a
   * trailer or in a stream message); fields the info lacks fall back to what the code implies.
   */
  static fromErrorInfo(code: grpc.status, info: ErrorInfoOutput, options: { fallbackMessage?: string; cause?: unknown } = {}): GatewayError {
    return new GatewayError(code, info.reason || reasonOfStatus(code), info.message || options.fallbackMessage || transportMessage(code), {
      param: info.param,
      retryAfterMs: info.retry_after_ms,
      retryable: info.retryable ?? false,
      provider: info.provider,
      upstreamStatus: info.upstream_status,
      cause: options.cause,
    });
  }

  /**
   * Rebuilds the GatewayError a peer sent. A status without the trailer (a deadline, a peer that
   * is down, a proxy) becomes a GatewayError with a reason derived from its code.
   */
  static fromServiceError(error: unknown): GatewayError {
    if (error instanceof GatewayError) return error;
    const serviceError = error as Partial<grpc.ServiceError>;
    const code = typeof serviceError.code === 'number' ? serviceError.code : grpc.status.UNKNOWN;
    const trailer = serviceError.metadata?.get(ERROR_TRAILER)[0];
    if (Buffer.isBuffer(trailer)) {
      try {
        return GatewayError.fromErrorInfo(code, errorInfoCodec.decode(trailer), { fallbackMessage: serviceError.details || 'failed', cause: error });
      } catch {
        // A trailer we cannot read is treated like none.
      }
    }
    return new GatewayError(code, reasonOfStatus(code), transportMessage(code), {
      retryable: code === grpc.status.UNAVAILABLE || code === grpc.status.RESOURCE_EXHAUSTED,
      cause: error,
    });
  }
}

function transportMessage(code: grpc.status): string {
  switch (code) {
    case grpc.status.DEADLINE_EXCEEDED:
      return 'An internal service did not answer in time.';
    case grpc.status.UNAVAILABLE:
      return 'An internal service is unavailable.';
    case grpc.status.CANCELLED:
      return 'The request was cancelled.';
    default:
      return 'An internal service failed.';
  }
}
