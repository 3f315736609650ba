import { describe, expect, it } from 'vitest';
import { ERROR_REASONS, errorReason, GatewayError, GrpcStatus, httpStatusOf, reasonOfStatus, type ErrorReason } from './index.js';

describe('the registry of error reasons', () => {
  const reasons = Object.keys(ERROR_REASONS) as ErrorReason[];

  it('builds each reason with its registered status and retryability, and carries both across a gRPC boundary', () => {
    for (const reason of reasons) {
      const entry = ERROR_REASONS[reason];
      const error = GatewayError.of(reason, `failed: ${reason}`, { param: 'x' });
      expect({ reason, code: error.code, retryable: error.retryable }).toEqual({ reason, code: entry.grpc, retryable: entry.retryable });
      const received = GatewayError.fromServiceError(error.toServiceError());
      expect({ reason: received.reason, code: received.code, retryable: received.retryable, status: httpStatusOf(received) }).toEqual({
        reason,
        code: entry.grpc,
        retryable: entry.retryable,
        status: entry.http,
      });
    }
  });

  it('lets a call site choose retryability, and never a status of its own', () => {
    expect(GatewayError.of('model_unavailable', 'no provider', { retryable: false })).toMatchObject({ code: GrpcStatus.UNAVAILABLE, retryable: false });
  });

  it('answers a reason it does not know (a peer of another version) by its gRPC status', () => {
    expect(errorReason('some_future_reason')).toBeUndefined();
    expect(errorReason('toString')).toBeUndefined();
    expect(httpStatusOf({ code: GrpcStatus.UNAVAILABLE, reason: 'some_future_reason' })).toBe(503);
    expect(httpStatusOf({ code: GrpcStatus.DEADLINE_EXCEEDED, reason: 'some_future_reason' })).toBe(504);
    expect(httpStatusOf({ code: GrpcStatus.DATA_LOSS, reason: 'some_future_reason' })).toBe(500);
    // A status without ErrorInfo (a peer that is down) gets the reason the registry gives it.
    expect(GatewayError.fromServiceError({ code: GrpcStatus.UNAVAILABLE, details: 'connection refused' })).toMatchObject({
      reason: reasonOfStatus(GrpcStatus.UNAVAILABLE),
      retryable: true,
    });
  });

  it('sends upstream failures the caller cannot fix as 5xx and the ones it can as 4xx', () => {
    expect(ERROR_REASONS.upstream_invalid_request.http).toBe(400);
    expect([ERROR_REASONS.upstream_error.http, ERROR_REASONS.upstream_rejected.http, ERROR_REASONS.upstream_timeout.http]).toEqual([502, 502, 504]);
  });
});
