/**
 * Reads the caller's key and asks auth about it. A denial becomes the matching OpenAI error (401,
 * 429 with Retry-After: error-codes.ts's DENIALS); auth failing to decide becomes a 503, never an
 * unmetered pass.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { WireErrors } from '../wire-errors.js';
import { GatewayError } from '@gateway/grpc';
import type { CheckKeyResponseOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../dependencies.js';
import { DENIALS, edgeError, UNAVAILABLE } from '../error-codes.js';
import { RequestError } from '../errors.js';
import { rateLimitHeaders, retryAfterHeaders } from '../rate-limit-headers.js';

const MISSING_KEY =
  "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";
/** The message of a missing key on a route that also reads `x-api-key` (Anthropic's API). */
const MISSING_HEADER_KEY = "You didn't provide an API key. Send it in an x-api-key header, or in an Authorization header using Bearer auth.";
const INVALID_KEY = 'Incorrect API key provided. You can find your API key in your gateway account.';
/** The message of a revoked key: the caller learns why the key stopped working. */
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
const KEY_ROUTES = new Set([
  'POST /v1/chat/completions',
  'POST /v1/responses',
  'POST /v1/messages',
  'POST /v1/messages/count_tokens',
  'GET /v1/models',
  'GET /v1/models/*',
  'GET /v1/usage',
  'POST /v1/files',
  'GET /v1/files',
  'GET /v1/files/:id',
  'DELETE /v1/files/:id',
  'GET /v1/files/:id/content',
  'POST /v1/batches',
  'GET /v1/batches',
  'GET /v1/batches/:id',
  'POST /v1/batches/:id/cancel',
  'POST /v1/messages/batches',
  'GET /v1/messages/batches',
  'GET /v1/messages/batches/:id',
  'POST /v1/messages/batches/:id/cancel',
  'GET /v1/messages/batches/:id/results',
  'DELETE /v1/messages/batches/:id',
  'POST /mcp',
  'GET /mcp',
  'DELETE /mcp',
  'DELETE /mcp/oauth/:server',
]);

/** The bearer token of a request, or a 401 when there is none. */
export function bearerKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header) : null;
  if (!match) throw edgeError('missing_api_key', MISSING_KEY);
  return match[1]!;
}

/**
 * The key of a request of Anthropic's API: its `x-api-key` header (what Anthropic's SDK sends), else
 * its bearer token (ANTHROPIC_AUTH_TOKEN); a 401 when there is neither.
 */
export function headerKey(request: FastifyRequest): string {
  const header = request.headers['x-api-key'];
  const key = typeof header === 'string' ? header.trim() : '';
  if (key.length > 0 && !/\s/.test(key)) return key;
  if (request.headers.authorization === undefined) throw edgeError('missing_api_key', MISSING_HEADER_KEY);
  return bearerKey(request);
}

/**
 * The wire whose errors and key a request of its route takes: the route's `wire` (in its config),
 * or, for a route that serves more than one API (GET /v1/models), the one its function picks for
 * the request; none: OpenAI's envelope and the bearer token.
 */
export function routeWire(request: FastifyRequest): WireErrors | undefined {
  const wire = (request.routeOptions.config as { wire?: WireErrors | ((request: FastifyRequest) => WireErrors | undefined) } | undefined)?.wire;
  return typeof wire === 'function' ? wire(request) : wire;
}

/**
 * The key of a request as its route reads it: the route's wire's reader (its `readKey`), else the
 * bearer token.
 */
export function requestKey(request: FastifyRequest): string {
  return (routeWire(request)?.readKey ?? bearerKey)(request);
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

/** What a key check may carry besides the key: the tokens to reserve, cancellation and the trace. */
export interface CheckKeyOptions {
  /** Tokens to reserve; 0 or absent only checks the key (nothing counted, nothing reserved). */
  reserveTokens?: number;
  /**
   * The most the request can cost (pico-USD), held against the key's and its team's budgets from
   * the decision until the request is metered or its reservation settled; 0 or absent: none.
   */
  costBoundPicoUsd?: bigint;
  signal?: AbortSignal;
  /** The caller's W3C traceparent, so that auth's span joins the request's trace. */
  traceparent?: string;
  /**
   * The model the request names, refused (403 model_not_allowed) by auth when an allow-list of
   * the key excludes it; absent or '' (auto, or no model): none is checked. Only a model of the
   * catalog is sent: any other name is a 404 model_not_found whatever the lists say, so auth never
   * sees a client's arbitrary string (a hostile body may name a 3 KiB model).
   */
  model?: string;
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
  { reserveTokens = 0, costBoundPicoUsd = 0n, signal, traceparent, model = '' }: CheckKeyOptions = {},
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
        // A decimal string: exact whatever its size (int64 on the wire).
        cost_bound_pico_usd: checkOnly || costBoundPicoUsd <= 0n ? '0' : costBoundPicoUsd.toString(),
        model: model && deps.catalog.get(model) ? model : '',
      },
      { deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId, signal, traceparent },
    );
  } catch (error) {
    const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
    deps.logger.warn({ request_id: requestId, reason: failure.reason }, 'auth could not decide');
    throw UNAVAILABLE.auth();
  }
  if (decision.decision === 'DECISION_ALLOW') return decision;
  const denial = denialError(decision);
  if (decision.key_id) deniedKeys.set(denial, { keyId: decision.key_id, teamId: decision.team_id ?? '' });
  throw denial;
}

/** The key (and its team) each denial of a known key was about, for the request log's refusals. */
const deniedKeys = new WeakMap<object, { keyId: string; teamId: string }>();

/** The key a denial thrown by checkKey refused, when auth knew it (not an invalid key's). */
export function deniedKeyOf(error: unknown): { keyId: string; teamId: string } | undefined {
  return typeof error === 'object' && error !== null ? deniedKeys.get(error) : undefined;
}

/**
 * Whether an invalid-key denial is for a revoked key: auth's deny_reason says so; an auth that
 * predates it (a rolling upgrade) leaves it unspecified, and then its message does.
 */
function isRevoked(decision: Denial): boolean {
  switch (decision.deny_reason) {
    case 'DENY_REASON_REVOKED':
      return true;
    case 'DENY_REASON_UNKNOWN_KEY':
      return false;
    default:
      return decision.message === REVOKED_KEY;
  }
}

/** What a denial's answer reads of a decision (its allow-lists are of no use to it). */
type Denial = Omit<CheckKeyResponseOutput, 'model_allow_lists' | 'mcp_tool_allow_lists'>;

/** The error answering one of auth's denials, by the DENIALS table; an unknown decision is an invalid key. */
export function denialError(decision: Denial): RequestError {
  const name = decision.decision as keyof typeof DENIALS;
  const { code, status, type } = Object.hasOwn(DENIALS, name) ? DENIALS[name] : DENIALS.DECISION_DENY_INVALID_KEY;
  switch (code) {
    case 'invalid_api_key':
      return new RequestError(status, isRevoked(decision) ? REVOKED_KEY : INVALID_KEY, { code, type });
    case 'model_not_allowed':
      // Nothing was counted, so no x-ratelimit-* headers; retrying cannot help.
      return new RequestError(status, decision.message || 'This API key is not allowed to use this model.', {
        code,
        type,
        param: 'model',
        headers: { 'x-should-retry': 'false' },
      });
    case 'insufficient_quota': {
      // Over a daily budget the time until the UTC day ends is the Retry-After; over a monthly one
      // waiting cannot help, so there is none. Either way an SDK's quick retries cannot help.
      const retryAfterMs = decision.retry_after_ms ?? 0;
      return new RequestError(status, decision.message || 'You exceeded your current quota.', {
        code,
        type,
        headers: { ...rateLimitHeaders(decision), ...(retryAfterMs > 0 ? retryAfterHeaders(retryAfterMs) : {}), 'x-should-retry': 'false' },
      });
    }
    default: {
      // Too large: x-should-retry: false and no Retry-After, since waiting cannot help.
      const tooLarge = code === 'request_too_large';
      return new RequestError(status, decision.message || 'Rate limit reached.', {
        code,
        type,
        headers: { ...rateLimitHeaders(decision), ...(tooLarge ? { 'x-should-retry': 'false' } : retryAfterHeaders(decision.retry_after_ms ?? 1000)) },
      });
    }
  }
}
