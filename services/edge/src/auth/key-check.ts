/**
 * Reads the caller's key and asks auth about it. A denial becomes the matching OpenAI error (401,
 * 429 with Retry-After); auth failing to decide becomes a 503, never an unmetered pass.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { GatewayError } from '@gateway/grpc';
import type { CheckKeyResponseOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../dependencies.js';
import { RequestError } from '../errors.js';
import { rateLimitHeaders, retryAfterHeaders } from '../rate-limit-headers.js';

const MISSING_KEY =
  "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";
const INVALID_KEY = 'Incorrect API key provided. You can find your API key in your gateway account.';
/** auth's message for a revoked key, passed on as it is: the caller learns why the key stopped working. */
const REVOKED_KEY = 'This API key has been revoked.';

const keyChecked = new WeakSet<FastifyRequest>();

/** Records that a request's key is being (or was) put to auth, whatever the answer. */
export function noteKeyChecked(request: FastifyRequest): void {
  keyChecked.add(request);
}

/**
 * Whether a failed request must have its key checked before its error is answered: a route that
 * needs a key, whose key auth has not seen yet. The key is checked before anything else about a
 * request, so that a caller without a valid key learns nothing from the body's errors (content
 * type, size, JSON, validation): those answer 401 first.
 */
export function keyCheckPending(request: FastifyRequest): boolean {
  return !keyChecked.has(request) && KEY_ROUTES.has(`${request.method} ${request.routeOptions.url ?? ''}`);
}

/** The routes that need an API key. */
const KEY_ROUTES = new Set(['POST /v1/chat/completions', 'GET /v1/models', 'GET /v1/models/*', 'GET /v1/usage']);

/** The bearer token of a request, or a 401 when there is none. */
export function bearerKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header) : null;
  if (!match) throw new RequestError(401, MISSING_KEY, { code: 'missing_api_key', type: 'invalid_request_error' });
  return match[1]!;
}

/**
 * The tokens a completion reserves: its prompt (counted with the real tokenizer) plus its
 * completion budget, `max_tokens` when given, else the model's largest output capped at
 * `defaultBudget` (the model is unknown for `auto`: then the cap alone).
 */
export function reservedTokens(promptTokens: number, maxTokens: number | undefined, modelMaxOutput: number | undefined, defaultBudget: number): number {
  if (maxTokens !== undefined) return promptTokens + maxTokens;
  return promptTokens + (modelMaxOutput ? Math.min(modelMaxOutput, defaultBudget) : defaultBudget);
}

/**
 * Asks auth about a key; resolves with the allowing decision, or throws the error to send. With
 * reserveTokens > 0 the request is counted and the tokens reserved under a reservation id drawn
 * here (never the client's request id, which a client could repeat); 0 only checks the key, so
 * listing models is not metered.
 */
export async function checkKey(
  deps: EdgeDependencies,
  apiKey: string,
  requestId: string,
  reserveTokens: number,
  signal?: AbortSignal,
  traceparent?: string,
): Promise<CheckKeyResponseOutput> {
  let decision: CheckKeyResponseOutput;
  try {
    const checkOnly = reserveTokens <= 0;
    // Sent once: a check whose answer is lost (deadline, a broken stream) has an unknown outcome
    // and is refused, never resent, so a request is never charged twice.
    decision = await deps.decisions.call(
      'check_key',
      {
        api_key: apiKey,
        request_id: requestId,
        reserve_tokens: Math.max(0, reserveTokens),
        reservation_id: checkOnly ? '' : randomUUID(),
        check_only: checkOnly,
      },
      { deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId, signal, traceparent },
    );
  } catch (error) {
    const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
    deps.logger.warn({ request_id: requestId, reason: failure.reason }, 'auth could not decide');
    throw new RequestError(503, 'The gateway cannot check API keys right now. Please retry shortly.', {
      code: 'auth_unavailable',
      headers: { 'retry-after': '1' },
    });
  }
  switch (decision.decision) {
    case 'DECISION_ALLOW':
      return decision;
    case 'DECISION_DENY_REQUEST_LIMIT':
    case 'DECISION_DENY_TOKEN_LIMIT':
    case 'DECISION_DENY_REQUEST_TOO_LARGE': {
      // Too large is a 429 as OpenAI sends it ("Request too large ... on tokens per min"), so
      // clients that special-case OpenAI's rate-limit errors keep working; x-should-retry: false
      // and no Retry-After, since waiting cannot help.
      const tooLarge = decision.decision === 'DECISION_DENY_REQUEST_TOO_LARGE';
      throw new RequestError(429, decision.message || 'Rate limit reached.', {
        code: tooLarge ? 'request_too_large' : 'rate_limit_exceeded',
        type: decision.decision === 'DECISION_DENY_REQUEST_LIMIT' ? 'requests' : 'tokens',
        headers: { ...rateLimitHeaders(decision), ...(tooLarge ? { 'x-should-retry': 'false' } : retryAfterHeaders(decision.retry_after_ms ?? 1000)) },
      });
    }
    case 'DECISION_DENY_BUDGET': {
      // OpenAI's answer when credit runs out: 429 insufficient_quota. Over a daily budget the time
      // until the UTC day ends is the Retry-After; over a monthly one waiting cannot help, so there
      // is none. Either way an SDK's quick retries cannot help: x-should-retry: false.
      const retryAfterMs = decision.retry_after_ms ?? 0;
      throw new RequestError(429, decision.message || 'You exceeded your current quota.', {
        code: 'insufficient_quota',
        type: 'insufficient_quota',
        headers: { ...rateLimitHeaders(decision), ...(retryAfterMs > 0 ? retryAfterHeaders(retryAfterMs) : {}), 'x-should-retry': 'false' },
      });
    }
    default:
      throw new RequestError(401, decision.message === REVOKED_KEY ? REVOKED_KEY : INVALID_KEY, { code: 'invalid_api_key', type: 'invalid_request_error' });
  }
}
