/**
 * The report stage of a completion: its usage event (to metering, over NATS), its GenAI metrics
 * and span attributes, priced; the wire renders the `gateway` object from what it sets.
 *
 * One piece: every usage event the edge publishes for a request (a completion's, a refusal's, and
 * the embedding a semantic cache lookup made) is built here, on one table of APIs and one bound
 * of the User-Agent, so that they read alike in metering and the request log.
 */
import { randomUUID } from 'node:crypto';
import { costPicoUsd, picoUsdToUsd } from '@gateway/catalog';
import type { EmbedResponseOutput, ExecuteRequest, UsageEvent, UsageOutput } from '@gateway/proto';
import { countPromptTokensAsync, countTextTokensAsync } from '@gateway/tokens';
import type { FastifyRequest } from 'fastify';
import type { EdgeDependencies } from '../dependencies.js';
import { type GenAiMetrics, planName } from '../genai-metrics.js';
import { tierName } from '../catalog-view.js';
import type { Completion } from './completion.js';
import { decisionJson } from '../guardrails/request-guard.js';

/** The usage of a request that produced nothing the gateway could count. */
export const NO_USAGE: UsageOutput = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };

/** The report stage: reports how a completion ended; see createUsageReporter. */
export type UsageReporter = (completion: Completion, outcome: UsageEvent['outcome']) => void;

/**
 * Creates the report stage: it prices a completion that ended (on its `answered`, `usage`,
 * `attempts`, `provider`, `firstTokenMs` and `errorCode`), hands its reservation to the usage event, sets its
 * span's attributes, observes its metrics and publishes its usage event; the wire then renders
 * the `gateway` object from the completion's `latencyMs` and `costPico`.
 */
export function createUsageReporter(deps: Pick<EdgeDependencies, 'usage'>, metrics: GenAiMetrics): UsageReporter {
  return function report(completion, outcome): void {
    const { answered, parsed, usage } = completion;
    // Priced by the provider that served it: a deployment of another provider bills its own prices.
    const priced = costPicoUsd((answered.provider_pricing?.[completion.provider] ?? answered.pricing ?? {}) as never, usage ?? {});
    // A hit costs the operator's share of what its answer would cost now, and saves the rest; its tokens reached no model.
    const hit = completion.cache?.status === 'hit' ? completion.cache : undefined;
    const costPico = hit ? hitCost(priced, hit.settings.hitCostRatio) : priced;
    if (hit) hit.savedPico = priced - costPico;
    completion.costPico = costPico;
    completion.latencyMs = completion.reply.elapsedTime;
    const reservationId = completion.reservation.handOff();
    const provider = answered.provider || completion.provider;
    if (completion.span) observeSpan(completion, outcome);
    metrics.observe({
      operation: completion.wire.operation,
      requestModel: parsed.request.model ?? '',
      responseModel: answered.id ?? '',
      routedModel: completion.routing.model.id ?? '',
      provider,
      plan: planName(completion.decision.plan),
      keyId: completion.decision.key_id ?? '',
      stream: parsed.stream,
      errorType: outcome === 'OUTCOME_COMPLETED' ? '' : outcome === 'OUTCOME_CANCELLED' ? 'cancelled' : 'failed',
      durationSeconds: completion.latencyMs / 1000,
      ...(completion.firstTokenMs !== undefined ? { firstTokenSeconds: completion.firstTokenMs / 1000 } : {}),
      inputTokens: hit ? 0 : (usage?.prompt_tokens ?? 0),
      outputTokens: hit ? 0 : (usage?.completion_tokens ?? 0),
      costUsd: picoUsdToUsd(costPico),
    });
    deps.usage.publish(usageEvent(completion, outcome, reservationId));
  };
}

/** The completion's usage event, as metering takes it. */
function usageEvent(completion: Completion, outcome: UsageEvent['outcome'], reservationId: string): UsageEvent {
  const { parsed, usage, traceparent, errorCode } = completion;
  const userAgent = completion.request.headers['user-agent'];
  const route = completion.routing.route;
  return {
    reservation_id: reservationId,
    event_id: completion.eventId,
    request_id: completion.requestId,
    key_id: completion.decision.key_id ?? '',
    // A team member's usage counts against its team's spend too (metering writes both).
    ...(completion.decision.team_id ? { team_id: completion.decision.team_id } : {}),
    model_id: completion.answered.id,
    provider: completion.provider,
    usage,
    received_at_ms: completion.receivedAtMs,
    latency_ms: Math.round(completion.latencyMs),
    stream: parsed.stream,
    outcome,
    requested_model: parsed.request.model,
    reported_cost_pico_usd: Number(completion.costPico),
    ...(traceparent ? { traceparent } : {}),
    fallback_attempts: completion.attempts.length,
    // How `auto` chose (the latest requests show it).
    ...(route && route.score !== undefined
      ? { auto: { score: route.score ?? 0, tier: tierName(route.quality_tier) ?? route.tier ?? '', policy: route.policy ?? '' } }
      : {}),
    ...(errorCode ? { error_code: errorCode } : {}),
    operation: completion.wire.operation,
    api: API_OF_ROUTE[completion.wire.route] ?? completion.wire.route,
    http_status: httpStatus(completion, outcome),
    ...(completion.firstTokenMs !== undefined ? { time_to_first_token_ms: Math.round(completion.firstTokenMs) } : {}),
    ...(userAgent ? { user_agent: userAgent.slice(0, USER_AGENT_MAX_LENGTH) } : {}),
    ...(completion.responseId ? { response_id: completion.responseId } : {}),
    fallback_models: completion.attempts.map((attempt) => attempt.model_id ?? ''),
    ...(completion.deploymentId ? { deployment_id: completion.deploymentId } : {}),
    guardrails: completion.guardDecisions.map(decisionJson),
    ...(completion.cache && { cache: cacheUseOf(completion) }),
    ...batchOf(completion.request.headers[BATCH_HEADER]),
  };
}

/** The header the batch service's lane sends each line with: the line's batch. */
const BATCH_HEADER = 'x-gateway-batch-id';
/** A batch id as the batch service makes them: OpenAI's batches (`batch_`) and Anthropic's message batches (`msgbatch_`). */
const BATCH_ID = /^(msg)?batch_[A-Za-z0-9]{1,64}$/;

/**
 * The usage event's `batch_id` from the request's batch header, when well formed. A label of the
 * caller's own usage, never a credential: the line is admitted, limited and priced on its key as
 * any online request is.
 */
function batchOf(header: string | string[] | undefined): { batch_id?: string } {
  return typeof header === 'string' && BATCH_ID.test(header) ? { batch_id: header } : {};
}

/** What a hit costs: `ratio` (0 to 1, to the millionth) of what its answer would cost. */
function hitCost(priced: bigint, ratio: number): bigint {
  return (priced * BigInt(Math.round(ratio * 1_000_000))) / 1_000_000n;
}

/** The usage event's `cache`: what the cache did, and for a hit its age, its cost and the cost it saved. */
function cacheUseOf(completion: Completion): UsageEvent['cache'] {
  const use = completion.cache!;
  if (use.status !== 'hit') return { status: use.status };
  return {
    status: 'hit',
    age_ms: use.ageMs ?? 0,
    saved_cost_pico_usd: Number(use.savedPico ?? 0n),
    cost_pico_usd: Number(completion.costPico),
    count_tokens: use.settings.countHitTokens,
    ...(use.similarity !== undefined && { similarity: use.similarity }),
  };
}

/** What the event of a refused request says of the request itself. */
interface RefusedRequest {
  eventId: string;
  requestId: string;
  receivedAtMs: number;
  latencyMs: number;
  stream: boolean;
  requestedModel: string;
  /** The route of its API (`/v1/chat/completions`, ...) and the operation it asked for. */
  route: string;
  operation: string;
  traceparent?: string | undefined;
  userAgent?: string | undefined;
  /** The guardrail decisions made before it was refused (a policy's block among them). */
  guardrails?: UsageEvent['guardrails'];
}

/** The key (and its team) a refused request was made with. */
export interface RefusedKey {
  keyId: string;
  teamId: string;
}

/** What the caller was answered: the status and the error code. */
export interface RefusalAnswer {
  status: number;
  code?: string | null | undefined;
}

/**
 * The event of a request of a known key that never reached a model, for the request log alone
 * (EdgeDependencies.refusals): outcome OUTCOME_REFUSED, no usage, no cost, the status and code the
 * caller was answered with.
 */
function refusedRequestEvent(request: RefusedRequest, refused: RefusedKey, answer: RefusalAnswer): UsageEvent {
  return {
    event_id: request.eventId,
    request_id: request.requestId,
    key_id: refused.keyId,
    ...(refused.teamId ? { team_id: refused.teamId } : {}),
    model_id: '',
    provider: '',
    usage: NO_USAGE,
    received_at_ms: request.receivedAtMs,
    latency_ms: Math.round(request.latencyMs),
    stream: request.stream,
    outcome: 'OUTCOME_REFUSED',
    requested_model: request.requestedModel,
    ...(request.traceparent ? { traceparent: request.traceparent } : {}),
    ...(answer.code ? { error_code: answer.code } : {}),
    operation: request.operation,
    api: API_OF_ROUTE[request.route] ?? request.route,
    http_status: answer.status,
    ...(request.userAgent ? { user_agent: request.userAgent.slice(0, USER_AGENT_MAX_LENGTH) } : {}),
    fallback_models: [],
    guardrails: request.guardrails ?? [],
  };
}

/** The event of a request auth refused for a known key (a rate limit, a budget, a model the key may not use). */
export function refusalEvent(completion: Completion, refused: RefusedKey, answer: RefusalAnswer): UsageEvent {
  return refusedRequestEvent(
    {
      eventId: completion.eventId,
      requestId: completion.requestId,
      receivedAtMs: completion.receivedAtMs,
      latencyMs: completion.reply.elapsedTime,
      stream: completion.parsed.stream,
      requestedModel: completion.parsed.request.model ?? '',
      route: completion.wire.route,
      operation: completion.wire.operation,
      traceparent: completion.traceparent,
      userAgent: completion.request.headers['user-agent'],
      guardrails: completion.guardDecisions.map(decisionJson),
    },
    refused,
    answer,
  );
}

/**
 * The event of a completion request of a known key refused before auth decided on it: a body its
 * API refuses (400, 413, 415), a model that does not exist (404), a prompt over the model's
 * context. Its model is what the body named, if it named one (cut to USER_AGENT_MAX_LENGTH: a
 * hostile body may name a long one). Undefined for a route that serves no completion.
 */
export function refusedBodyEvent(request: FastifyRequest, latencyMs: number, refused: RefusedKey, answer: RefusalAnswer): UsageEvent | undefined {
  const route = request.routeOptions.url ?? '';
  if (!(route in API_OF_ROUTE)) return undefined;
  const body = typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, unknown>) : {};
  const traceparent = request.headers.traceparent;
  return refusedRequestEvent(
    {
      eventId: randomUUID(),
      requestId: request.id,
      receivedAtMs: Date.now() - latencyMs,
      latencyMs,
      stream: body.stream === true,
      requestedModel: typeof body.model === 'string' ? body.model.slice(0, USER_AGENT_MAX_LENGTH) : '',
      route,
      operation: route === '/v1/embeddings' ? 'embeddings' : 'chat',
      traceparent: typeof traceparent === 'string' ? traceparent : undefined,
      userAgent: request.headers['user-agent'],
    },
    refused,
    answer,
  );
}

/** The API names of the usage event (UsageEvent.api), by the route of the wire. */
const API_OF_ROUTE: Readonly<Record<string, string>> = {
  '/v1/chat/completions': 'chat_completions',
  '/v1/responses': 'responses',
  '/v1/messages': 'messages',
  '/v1/embeddings': 'embeddings',
};

/** The longest User-Agent a usage event carries (UsageEvent.user_agent). */
const USER_AGENT_MAX_LENGTH = 256;

/**
 * The status the caller was answered with: the failure's own, 499 (the client closed the request,
 * as nginx logs it) for a cancelled one, else the reply's (200).
 */
function httpStatus(completion: Completion, outcome: UsageEvent['outcome']): number {
  if (outcome === 'OUTCOME_CANCELLED') return 499;
  if (outcome === 'OUTCOME_FAILED') return completion.httpStatus ?? 500;
  return completion.reply.statusCode || 200;
}

/** The span attributes and fallback events of a completion that ended. */
function observeSpan(completion: Completion, outcome: UsageEvent['outcome']): void {
  const span = completion.span!;
  const { answered, usage } = completion;
  span.setAttributes({
    'gen_ai.response.model': answered.id ?? '',
    'gen_ai.provider.name': answered.provider || completion.provider,
    'gen_ai.usage.input_tokens': usage?.prompt_tokens ?? 0,
    'gen_ai.usage.output_tokens': usage?.completion_tokens ?? 0,
    'gateway.cost_usd': picoUsdToUsd(completion.costPico),
    'gateway.outcome': outcome ?? '',
  });
  if (completion.firstTokenMs !== undefined) span.setAttribute('gateway.time_to_first_token_ms', completion.firstTokenMs);
  for (const attempt of completion.attempts)
    span.addEvent('gateway.fallback', { 'gateway.fallback.from_model': attempt.model_id ?? '', 'gateway.fallback.reason': attempt.reason ?? '' });
}

/** Usage of a stream that did not finish: the real prompt count and the tokens streamed so far. */
export async function estimatedUsage(execute: ExecuteRequest, streamedText: string): Promise<UsageOutput> {
  const prompt = await countPromptTokensAsync(execute.request!);
  const completion = await countTextTokensAsync(streamedText);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, cached_tokens: 0, reasoning_tokens: 0 };
}

/** The embedding a semantic lookup made of a request's question: what its usage event carries. */
export interface QuestionEmbedding {
  /** The settings' semantic model, as asked. */
  model: string;
  response: EmbedResponseOutput;
  receivedAtMs: number;
  latencyMs: number;
  costPico: bigint;
}

/**
 * The usage event of the embedding a semantic lookup made for a completion: an embeddings request
 * of its own (its own event id, the completion's request id), metered to the completion's key and
 * team like any embedding, in the usage API and the request log.
 */
export function questionEmbeddingEvent(completion: Completion, embedding: QuestionEmbedding): UsageEvent {
  const { response } = embedding;
  const userAgent = completion.request.headers['user-agent'];
  return {
    event_id: randomUUID(),
    request_id: completion.requestId,
    key_id: completion.decision.key_id ?? '',
    ...(completion.decision.team_id ? { team_id: completion.decision.team_id } : {}),
    model_id: response.model_id || embedding.model,
    provider: response.provider,
    usage: response.usage ?? NO_USAGE,
    received_at_ms: embedding.receivedAtMs,
    latency_ms: Math.round(embedding.latencyMs),
    stream: false,
    outcome: 'OUTCOME_COMPLETED',
    requested_model: embedding.model,
    reported_cost_pico_usd: Number(embedding.costPico),
    ...(completion.traceparent ? { traceparent: completion.traceparent } : {}),
    fallback_attempts: 0,
    operation: 'embeddings',
    api: API_OF_ROUTE['/v1/embeddings']!,
    http_status: 200,
    ...(userAgent ? { user_agent: userAgent.slice(0, USER_AGENT_MAX_LENGTH) } : {}),
    fallback_models: [],
    ...(response.deployment_id ? { deployment_id: response.deployment_id } : {}),
    guardrails: [],
  };
}
