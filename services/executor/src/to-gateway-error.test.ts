import { describe, expect, it } from 'vitest';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import { UpstreamError, type UpstreamErrorOptions } from './providers/upstream-error.js';
import { toGatewayError } from './to-gateway-error.js';

function mapped(options: Omit<UpstreamErrorOptions, 'provider'>): GatewayError {
  const result = toGatewayError(new UpstreamError('test failure', { provider: 'openai-compatible', ...options }));
  expect(result).toBeInstanceOf(GatewayError);
  return result as GatewayError;
}

describe('toGatewayError', () => {
  it.each([
    [{ kind: 'http', status: 429, retryAfterMs: 3000 }, GrpcStatus.RESOURCE_EXHAUSTED, 'upstream_rate_limited', true],
    [{ kind: 'http', status: 500 }, GrpcStatus.UNAVAILABLE, 'upstream_error', true],
    [{ kind: 'http', status: 503 }, GrpcStatus.UNAVAILABLE, 'upstream_error', true],
    [{ kind: 'connection' }, GrpcStatus.UNAVAILABLE, 'upstream_error', true],
    [{ kind: 'malformed', status: 200 }, GrpcStatus.UNAVAILABLE, 'upstream_error', true],
    [{ kind: 'truncated', status: 200 }, GrpcStatus.UNAVAILABLE, 'upstream_error', true],
    [{ kind: 'timeout' }, GrpcStatus.DEADLINE_EXCEEDED, 'upstream_timeout', true],
    [{ kind: 'http', status: 408 }, GrpcStatus.DEADLINE_EXCEEDED, 'upstream_timeout', true],
    [{ kind: 'http', status: 400, upstreamMessage: 'bad temperature' }, GrpcStatus.INVALID_ARGUMENT, 'upstream_invalid_request', false],
    [{ kind: 'http', status: 422 }, GrpcStatus.INVALID_ARGUMENT, 'upstream_invalid_request', false],
    [{ kind: 'http', status: 400, upstreamCode: 'content_filter' }, GrpcStatus.INVALID_ARGUMENT, 'content_filter', false],
    [{ kind: 'http', status: 413 }, GrpcStatus.INVALID_ARGUMENT, 'upstream_invalid_request', false],
    [{ kind: 'http', status: 401 }, GrpcStatus.FAILED_PRECONDITION, 'upstream_rejected', false],
    [{ kind: 'http', status: 403 }, GrpcStatus.FAILED_PRECONDITION, 'upstream_rejected', false],
    [{ kind: 'http', status: 404 }, GrpcStatus.FAILED_PRECONDITION, 'upstream_rejected', false],
    [{ kind: 'http', status: 418 }, GrpcStatus.UNAVAILABLE, 'upstream_error', false],
  ] as const)('maps %o to status %i, %s, retryable %s', (options, code, reason, retryable) => {
    const error = mapped(options);
    expect(error).toMatchObject({ code, reason, retryable, provider: 'openai-compatible' });
    if ('status' in options) expect(error.upstreamStatus).toBe(options.status);
  });

  it('keeps the retry-after and shows only a 400 message, never another upstream message', () => {
    expect(mapped({ kind: 'http', status: 429, retryAfterMs: 3000 }).retryAfterMs).toBe(3000);
    expect(mapped({ kind: 'http', status: 400, upstreamMessage: 'bad temperature' }).message).toContain('bad temperature');
    expect(mapped({ kind: 'http', status: 400, upstreamCode: 'content_filter', upstreamMessage: 'The prompt was filtered.' })).toMatchObject({
      message: "The openai-compatible upstream's content filter refused the prompt: The prompt was filtered.",
      param: 'prompt',
    });
    expect(mapped({ kind: 'http', status: 401, upstreamMessage: 'Incorrect API key sk-abc' }).message).not.toContain('sk-abc');
    expect(mapped({ kind: 'http', status: 500, upstreamMessage: 'stack trace at db.go:12' }).message).not.toContain('db.go');
  });

  it('passes GatewayErrors and unknown failures through unchanged', () => {
    const gatewayError = new GatewayError(GrpcStatus.NOT_FOUND, 'model_not_found', 'nope');
    expect(toGatewayError(gatewayError)).toBe(gatewayError);
    const bug = new TypeError('undefined is not a function');
    expect(toGatewayError(bug)).toBe(bug);
  });
});
