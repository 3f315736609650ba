/**
 * The one registry of error reasons: every reason a GatewayError carries between services, with
 * the gRPC status it travels with, the HTTP status and OpenAI error `type` the edge answers with
 * (the reason itself is OpenAI's `code`), and whether sending the request again can help. Code
 * decides on these fields, never on the spelling of a reason; a reason not listed here does not
 * type-check (GatewayError.of). A peer of another version may still send one: the edge then
 * falls back on the gRPC status (httpStatusOf).
 */
import { status as GrpcStatus } from '@grpc/grpc-js';

/** What a reason means on each side of the gateway. */
export interface ErrorReasonEntry {
  /** The gRPC status a GatewayError of this reason travels with. */
  grpc: GrpcStatus;
  /** The HTTP status the edge answers with. */
  http: number;
  /** OpenAI's error `type` in the edge's envelope. */
  type: string;
  /** Whether the same request sent again (later) can succeed. */
  retryable: boolean;
}

function entry(grpc: GrpcStatus, http: number, type: string, retryable: boolean): ErrorReasonEntry {
  return Object.freeze({ grpc, http, type, retryable });
}

const INVALID = 'invalid_request_error';
const UNAVAILABLE = 'service_unavailable_error';

/** Every reason, by name. */
export const ERROR_REASONS = Object.freeze({
  // The caller's request is wrong: fix it, do not retry.
  invalid_request: entry(GrpcStatus.INVALID_ARGUMENT, 400, INVALID, false),
  invalid_value: entry(GrpcStatus.INVALID_ARGUMENT, 400, INVALID, false),
  unsupported_parameter: entry(GrpcStatus.INVALID_ARGUMENT, 400, INVALID, false),
  context_length_exceeded: entry(GrpcStatus.INVALID_ARGUMENT, 400, INVALID, false),
  // The upstream refused the request as invalid (400, 413, 422): the caller's to fix.
  upstream_invalid_request: entry(GrpcStatus.INVALID_ARGUMENT, 400, INVALID, false),
  // The upstream's content filter refused the prompt (Azure OpenAI's 400 `content_filter`).
  content_filter: entry(GrpcStatus.INVALID_ARGUMENT, 400, INVALID, false),
  invalid_api_key: entry(GrpcStatus.UNAUTHENTICATED, 401, 'authentication_error', false),
  permission_denied: entry(GrpcStatus.PERMISSION_DENIED, 403, 'permission_error', false),
  not_found: entry(GrpcStatus.NOT_FOUND, 404, INVALID, false),
  model_not_found: entry(GrpcStatus.NOT_FOUND, 404, INVALID, false),
  key_not_found: entry(GrpcStatus.NOT_FOUND, 404, INVALID, false),
  key_exists: entry(GrpcStatus.ALREADY_EXISTS, 409, INVALID, false),
  admin_token_not_found: entry(GrpcStatus.NOT_FOUND, 404, INVALID, false),
  team_not_found: entry(GrpcStatus.NOT_FOUND, 404, INVALID, false),
  // A team is deleted only once none of its keys is live.
  team_has_keys: entry(GrpcStatus.FAILED_PRECONDITION, 409, INVALID, false),
  rate_limit_exceeded: entry(GrpcStatus.RESOURCE_EXHAUSTED, 429, 'rate_limit_error', true),
  cancelled: entry(GrpcStatus.CANCELLED, 499, INVALID, false),
  // The model side failed.
  upstream_rate_limited: entry(GrpcStatus.RESOURCE_EXHAUSTED, 429, 'rate_limit_error', true),
  upstream_error: entry(GrpcStatus.UNAVAILABLE, 502, 'upstream_error', true),
  // The gateway's provider key, base URL or model name is wrong: the operator's to fix.
  upstream_rejected: entry(GrpcStatus.FAILED_PRECONDITION, 502, 'upstream_error', false),
  upstream_timeout: entry(GrpcStatus.DEADLINE_EXCEEDED, 504, 'timeout_error', true),
  model_unavailable: entry(GrpcStatus.UNAVAILABLE, 503, UNAVAILABLE, true),
  // A part of the gateway could not answer.
  service_unavailable: entry(GrpcStatus.UNAVAILABLE, 503, UNAVAILABLE, true),
  auth_unavailable: entry(GrpcStatus.UNAVAILABLE, 503, UNAVAILABLE, true),
  store_unavailable: entry(GrpcStatus.UNAVAILABLE, 503, UNAVAILABLE, true),
  deadline_exceeded: entry(GrpcStatus.DEADLINE_EXCEEDED, 504, 'timeout_error', true),
  internal_error: entry(GrpcStatus.INTERNAL, 500, 'server_error', false),
} satisfies Record<string, ErrorReasonEntry>);

/** A registered reason. */
export type ErrorReason = keyof typeof ERROR_REASONS;

/** The registry's entry of a reason, or undefined for one it does not know (a peer of another version). */
export function errorReason(reason: string): ErrorReasonEntry | undefined {
  return Object.hasOwn(ERROR_REASONS, reason) ? ERROR_REASONS[reason as ErrorReason] : undefined;
}

/** The reason each bare gRPC status stands for; any other status stands for `internal_error`. */
const REASON_OF_STATUS: ReadonlyMap<GrpcStatus, ErrorReason> = new Map<GrpcStatus, ErrorReason>([
  [GrpcStatus.DEADLINE_EXCEEDED, 'deadline_exceeded'],
  [GrpcStatus.UNAVAILABLE, 'service_unavailable'],
  [GrpcStatus.CANCELLED, 'cancelled'],
  [GrpcStatus.NOT_FOUND, 'not_found'],
  [GrpcStatus.INVALID_ARGUMENT, 'invalid_request'],
  [GrpcStatus.UNAUTHENTICATED, 'invalid_api_key'],
  [GrpcStatus.PERMISSION_DENIED, 'permission_denied'],
  [GrpcStatus.RESOURCE_EXHAUSTED, 'rate_limit_exceeded'],
]);

/** The reason a bare gRPC status stands for, when a peer sent no ErrorInfo (a deadline, a peer that is down). */
export function reasonOfStatus(code: GrpcStatus): ErrorReason {
  return REASON_OF_STATUS.get(code) ?? 'internal_error';
}

/** The HTTP status of a GatewayError: its reason's, or for an unregistered reason its gRPC status's. */
export function httpStatusOf(error: { code: GrpcStatus; reason: string }): number {
  return errorReason(error.reason)?.http ?? ERROR_REASONS[reasonOfStatus(error.code)].http;
}
