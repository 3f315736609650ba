/**
 * Reads the caller's key and asks auth about it. A denial becomes the matching OpenAI error (401,
 * 429 with Retry-After); auth failing to decide becomes a 503, never an unmetered pass.
 */
import type { FastifyRequest } from 'fastify';
import { GatewayError, callUnary } from '@gateway/grpc';
import type { CheckKeyRequest, CheckKeyResponseOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../app.js';
import { RequestError } from '../errors.js';

const MISSING_KEY = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";
const INVALID_KEY = 'Incorrect API key provided. You can find your API key in your gateway account.';

/** The bearer token of a request, or a 401 when there is none. */
export function bearerKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header) : null;
  if (!match) throw new RequestError(401, MISSING_KEY, { code: 'missing_api_key', type: 'invalid_request_error' });
  return match[1]!;
}

/** Asks auth about a key; resolves with the allowing decision, or throws the error to send. */
export async function checkKey(deps: EdgeDependencies, apiKey: string, requestId: string, reserveTokens: number, signal?: AbortSignal): Promise<CheckKeyResponseOutput> {
  let decision: CheckKeyResponseOutput;
  try {
    decision = await callUnary<CheckKeyRequest, CheckKeyResponseOutput>(deps.auth, deps.auth.CheckKey, { api_key: apiKey, request_id: requestId, reserve_tokens: reserveTokens }, { deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId, signal });
  } catch (error) {
    const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
    deps.logger.warn({ request_id: requestId, reason: failure.reason }, 'auth could not decide');
    throw new RequestError(503, 'The gateway cannot check API keys right now. Please retry shortly.', { code: 'auth_unavailable', headers: { 'retry-after': '1' } });
  }
  switch (decision.decision) {
    case 'DECISION_ALLOW':
      return decision;
    case 'DECISION_DENY_REQUEST_LIMIT':
    case 'DECISION_DENY_TOKEN_LIMIT':
    case 'DECISION_DENY_REQUEST_TOO_LARGE': {
      const retryMs = Math.max(1, decision.retry_after_ms ?? 1000);
      const tooLarge = decision.decision === 'DECISION_DENY_REQUEST_TOO_LARGE';
      throw new RequestError(tooLarge ? 429 : 429, decision.message || 'Rate limit reached.', {
        code: tooLarge ? 'request_too_large' : 'rate_limit_exceeded',
        type: decision.decision === 'DECISION_DENY_REQUEST_LIMIT' ? 'requests' : 'tokens',
        headers: tooLarge ? { 'x-should-retry': 'false' } : { 'retry-after': String(Math.max(1, Math.ceil(retryMs / 1000))), 'retry-after-ms': String(retryMs) },
      });
    }
    default:
      throw new RequestError(401, INVALID_KEY, { code: 'invalid_api_key', type: 'invalid_request_error' });
  }
}
