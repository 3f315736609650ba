/**
 * The frames of the streamed-calls convention as both sides read and write them: what a request
 * and a response message hold, the header that names a stream's methods, and the failures both
 * sides build. The protocol itself (who sends what, credit, cancel, drain, errors) is written up
 * once in proto/gateway/rpc/v1/STREAMED_CALLS.md.
 */
import * as grpc from '@grpc/grpc-js';
import type { ErrorInfoOutput } from '@gateway/proto';
import { GatewayError } from './gateway-error.js';

/** A response message as received. */
export interface StreamedResponseOutput {
  call_id?: number;
  result?: string;
  error?: { code?: number; info?: ErrorInfoOutput | null } | null;
  last?: boolean;
  [member: string]: unknown;
}

/** A request message as received. */
export interface StreamedRequestOutput {
  call_id?: number;
  deadline_ms?: number;
  window?: number;
  traceparent?: string;
  cancel?: object | null;
  credit?: { events?: number } | null;
  [member: string]: unknown;
}

/**
 * The response header naming the methods a stream carries (`complete,stream`): a caller sends a
 * streamed call only on a stream that names its method, so that it keeps working against a server
 * of an earlier version during a rolling upgrade.
 */
export const METHODS_HEADER = 'gateway-streamed-methods';

/** The `error` answer to a call: the status and ErrorInfo its unary RPC would have ended with. */
export function errorFrame(callId: number, failure: GatewayError): Record<string, unknown> {
  return { call_id: callId, error: { code: failure.code, info: failure.toErrorInfo() } };
}

/** The failure of a call whose stream ended before its answer came: its outcome is unknown. */
export function streamLost(cause?: unknown): GatewayError {
  return new GatewayError(grpc.status.UNAVAILABLE, 'service_unavailable', 'An internal service is unavailable.', { retryable: true, cause });
}

/** A call failed here with a bare status (its deadline passed, its caller gave up). */
export function localFailure(code: grpc.status): GatewayError {
  return GatewayError.fromServiceError({ code });
}
