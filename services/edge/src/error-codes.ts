/**
 * The registry of every error `code` the edge answers with, each with its HTTP status and OpenAI
 * error `type`. A code a peer service sends (a GatewayError's reason) is @gateway/grpc's
 * ERROR_REASONS, which holds its HTTP status and type already; this file holds the edge's own
 * refusals (no key, a body that is no JSON, an unknown URL, a field that breaks the request's
 * schema) and the answers to auth's denials. error-codes.test.ts proves that every code the edge's
 * source sends is registered here or there.
 */
import { ERROR_REASONS, type ErrorReason } from '@gateway/grpc';
import type { DecisionOutput } from '@gateway/proto';
import { retrySoonHeaders } from './rate-limit-headers.js';
import { RequestError } from './request-error.js';

/** What a code answers with. */
export interface EdgeErrorEntry {
  /** The HTTP status. */
  status: number;
  /** OpenAI's error `type` in the envelope. */
  type: string;
}

function entry(status: number, type: string): EdgeErrorEntry {
  return Object.freeze({ status, type });
}

const INVALID = 'invalid_request_error';
const BAD_REQUEST = entry(400, INVALID);

/** The edge's own codes, none of them a reason of ERROR_REASONS (the test checks). */
export const EDGE_ERROR_CODES = Object.freeze({
  // The caller's key: OpenAI answers a missing or wrong key with invalid_request_error.
  missing_api_key: entry(401, INVALID),
  // The body, before any of its fields is read.
  request_too_large: entry(413, INVALID),
  unsupported_media_type: entry(415, INVALID),
  invalid_json: BAD_REQUEST,
  invalid_body: BAD_REQUEST,
  // A field of the body or the query (OpenAI's validation codes; invalid_value is a reason).
  invalid_type: BAD_REQUEST,
  missing_required_parameter: BAD_REQUEST,
  unknown_parameter: BAD_REQUEST,
  invalid_parameter: BAD_REQUEST,
  empty_array: BAD_REQUEST,
  empty_string: BAD_REQUEST,
  array_above_max_length: BAD_REQUEST,
  duplicate_function_name: BAD_REQUEST,
  invalid_function_parameters: BAD_REQUEST,
  invalid_function_name: BAD_REQUEST,
  invalid_image_url: BAD_REQUEST,
  // The Responses API's references to stored state: a previous response, an item.
  previous_response_not_found: BAD_REQUEST,
  item_not_found: BAD_REQUEST,
  // A compaction item the gateway did not make (Codex sends back the ones it did).
  invalid_compaction: BAD_REQUEST,
  // `auto` or a fallback chain with no model the key's allow-lists let it use.
  no_allowed_model: BAD_REQUEST,
  // A guardrail policy blocked the request's input or an MCP tool call (guardrails/).
  content_policy_violation: BAD_REQUEST,
  // The URL and the method.
  unknown_url: entry(404, INVALID),
  method_not_allowed: entry(405, INVALID),
  // The admin API's token.
  missing_admin_token: entry(401, 'authentication_error'),
  invalid_admin_token: entry(401, 'authentication_error'),
  admin_token_required: entry(403, 'permission_error'),
  admin_role_required: entry(403, 'permission_error'),
  // A part of the edge that is not ready.
  catalog_unavailable: entry(503, 'service_unavailable_error'),
  console_not_built: entry(503, 'service_unavailable_error'),
  request_log_not_configured: entry(503, 'service_unavailable_error'),
  // The MCP gateway (/mcp): its session header, and the MCP service behind it.
  mcp_session_required: BAD_REQUEST,
  mcp_session_not_found: entry(404, INVALID),
  mcp_unavailable: entry(503, 'service_unavailable_error'),
  // OpenAI's Files and Batch APIs (/v1/files, /v1/batches): no batch service, or one that cannot answer.
  batch_not_configured: entry(404, INVALID),
  batch_service_unavailable: entry(503, 'service_unavailable_error'),
  // Single sign-on (console-sso.ts): the sign-in flow, the provider's answer, the user's role.
  sso_flow_expired: BAD_REQUEST,
  sso_state_mismatch: BAD_REQUEST,
  sso_provider_refused: entry(401, 'authentication_error'),
  sso_token_invalid: entry(401, 'authentication_error'),
  sso_role_missing: entry(403, 'permission_error'),
  sso_provider_unreachable: entry(502, 'upstream_error'),
} satisfies Record<string, EdgeErrorEntry>);

/** A code of the edge's own. */
export type EdgeErrorCode = keyof typeof EDGE_ERROR_CODES;

/** What an answer to auth's denial is made of: the code, status and type OpenAI answers with. */
export interface DenialEntry extends EdgeErrorEntry {
  code: string;
}

function denial(code: string, status: number, type: string): DenialEntry {
  return Object.freeze({ code, status, type });
}

/**
 * The answer to each of auth's denials (CheckKeyResponse.decision), as OpenAI answers them: 429s
 * typed by the limit (`requests`, `tokens`) and 401 invalid_request_error for a key, so clients
 * that special-case OpenAI's errors keep working. A decision missing here (one a newer auth added)
 * is answered as an invalid key.
 */
export const DENIALS = Object.freeze({
  DECISION_DENY_INVALID_KEY: denial('invalid_api_key', 401, INVALID),
  DECISION_DENY_REQUEST_LIMIT: denial('rate_limit_exceeded', 429, 'requests'),
  DECISION_DENY_TOKEN_LIMIT: denial('rate_limit_exceeded', 429, 'tokens'),
  // Too large is a 429 as OpenAI sends it ("Request too large ... on tokens per min").
  DECISION_DENY_REQUEST_TOO_LARGE: denial('request_too_large', 429, 'tokens'),
  // OpenAI's answer when credit runs out.
  DECISION_DENY_BUDGET: denial('insufficient_quota', 429, 'insufficient_quota'),
  // The key may not use the model: a refusal of the key, as OpenAI's 403 for a project's model.
  DECISION_DENY_MODEL_NOT_ALLOWED: denial('model_not_allowed', 403, 'permission_error'),
} satisfies Record<Exclude<DecisionOutput, 'DECISION_ALLOW' | 'DECISION_UNSPECIFIED'>, DenialEntry>);

/** The registry's entry of a code the edge itself answers with: its own, or a peer's reason. */
export function edgeErrorEntry(code: EdgeErrorCode | ErrorReason): EdgeErrorEntry {
  if (Object.hasOwn(EDGE_ERROR_CODES, code)) return EDGE_ERROR_CODES[code as EdgeErrorCode];
  const reason = ERROR_REASONS[code as ErrorReason];
  return { status: reason.http, type: reason.type };
}

/** Every code the registry knows: the edge's own, its answers to denials and the peers' reasons. */
export function registeredCodes(): Set<string> {
  return new Set([...Object.keys(EDGE_ERROR_CODES), ...Object.values(DENIALS).map((entry) => entry.code), ...Object.keys(ERROR_REASONS)]);
}

/** The refusal of a registered code, with its status and type from the registry. */
export function edgeError(
  code: EdgeErrorCode | ErrorReason,
  message: string,
  options: { param?: string | null; headers?: Record<string, string> } = {},
): RequestError {
  const { status, type } = edgeErrorEntry(code);
  return new RequestError(status, message, { ...options, code, type });
}

/**
 * What the edge answers when a part it depends on cannot answer now, by that part: a 503 whose
 * message says what is down, with retry-after 1 s. One place for each of these outward messages.
 */
export const UNAVAILABLE = Object.freeze({
  auth: () => edgeError('auth_unavailable', 'The gateway cannot check API keys right now. Please retry shortly.', { headers: retrySoonHeaders() }),
  mcp: () => edgeError('mcp_unavailable', 'The MCP gateway is unavailable right now. Please retry shortly.', { headers: retrySoonHeaders() }),
  batch: () => edgeError('batch_service_unavailable', 'The batch service is unavailable right now. Please retry shortly.', { headers: retrySoonHeaders() }),
  catalog: () => edgeError('catalog_unavailable', 'The model catalog is not available yet. Please retry shortly.', { headers: retrySoonHeaders() }),
  // The JSON parser's thread died (it is started again for the next body).
  requestBody: () => edgeError('service_unavailable', 'The gateway could not read the request body. Please retry.', { headers: retrySoonHeaders() }),
});
