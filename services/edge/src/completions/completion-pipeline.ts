/**
 * The completion pipeline: every completion request, whichever wire it came in on, passes through
 * the same stages. Admit (the key's check and its quota) and route (the model, or `auto`) run at
 * the same time; execute runs it on an executor, whole or streamed (sse-relay.ts); report
 * publishes its usage event and metrics (usage-report.ts). The wire (CompletionWire, completion.ts) only
 * parses the body and renders the answer.
 *
 * One piece: the stages in the order a request meets them, in one class whose fields (the
 * dependencies, the metrics) every stage uses; what a stage does beyond its order is in the files
 * named above.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { costBoundPicoUsd } from '@gateway/catalog';
import { GatewayError } from '@gateway/grpc';
import { NO_TRACING, SpanKind, SpanStatusCode, type Tracing } from '@gateway/observability';
import type { CacheEntryOutput, CheckKeyResponseOutput, ExecuteResponseOutput, ModelOutput } from '@gateway/proto';
import { checkKey, deniedKeyOf, noteKeyChecked, reservedTokens } from '../auth/key-check.js';
import { holdReservation } from '../auth/reservations.js';
import type { EdgeDependencies } from '../dependencies.js';
import { RequestError, toRequestError } from '../errors.js';
import { GenAiMetrics } from '../genai-metrics.js';
import { rateLimitHeaders, retryAfterHeaders } from '../rate-limit-headers.js';
import { tierName } from '../catalog-view.js';
import type { ParsedChatRequest } from './parsed-request.js';
import { Completion, type CompletionWire, type WholeAnswer } from './completion.js';
import { allowedRouting, allowListsOf } from './allowed-models.js';
import { withReplicaRetry } from './executor-replicas.js';
import { fallbackChain } from './fallback-chain.js';
import { answeredModel, countBoundedPromptTokens, createModelResolver, type ModelResolver, promptTokensOf, type Routing } from './model-resolution.js';
import { keepBodies, streamedAnswer } from './request-bodies.js';
import { relayStream } from './sse-relay.js';
import { createUsageReporter, NO_USAGE, refusalEvent, type UsageReporter } from './usage-report.js';
import { guardCompletionInput, guardWholeAnswer } from './completion-guard.js';
import { type GuardChecks, guardChecksOf } from '../guardrails/request-guard.js';
import { hitCompletionId, ResponseCache } from './response-cache.js';
import { replayStream } from './cached-stream.js';

/** The stages of a completion, built once per edge from its dependencies. */
export class CompletionPipeline {
  private readonly metrics: GenAiMetrics;
  private readonly tracing: Tracing;
  private readonly resolve: ModelResolver;
  private readonly report: UsageReporter;
  /** The guard and its policies; undefined without GUARD_SERVICE_ADDR (nothing is checked). */
  private readonly guardChecks: GuardChecks | undefined;
  /** The response cache; undefined without CACHE_SERVICE_ADDR (nothing is looked up or kept). */
  private readonly cache: ResponseCache | undefined;

  constructor(private readonly deps: EdgeDependencies) {
    this.guardChecks = guardChecksOf(deps);
    this.metrics = new GenAiMetrics(deps.registry, { keyId: deps.config.EDGE_METRICS_KEY_ID });
    this.tracing = deps.tracing ?? NO_TRACING;
    this.resolve = createModelResolver(deps);
    this.report = createUsageReporter(deps, this.metrics);
    this.cache =
      deps.cache && deps.cacheSettings
        ? new ResponseCache({
            cache: deps.cache,
            cacheSettings: deps.cacheSettings,
            lookupDeadlineMs: deps.config.EDGE_CACHE_LOOKUP_DEADLINE_MS,
            joinDeadlineMs: deps.config.EDGE_COMPLETION_DEADLINE_MS,
            logger: deps.logger,
            registry: deps.registry,
            embedder: {
              embed: (request, options) => deps.completions.call('embed', request, options),
              usage: deps.usage,
              catalog: deps.catalog,
              deadlineMs: deps.config.EDGE_CACHE_SEMANTIC_DEADLINE_MS,
              logger: deps.logger,
            },
          })
        : undefined;
  }

  /**
   * Serves one request of a wire: the body of a whole answer, or the reply once its stream ended.
   * Every failure is thrown, for the edge's error handler to answer in the wire's shape.
   */
  async run<Parsed extends ParsedChatRequest>(wire: CompletionWire<Parsed>, request: FastifyRequest, reply: FastifyReply): Promise<string | FastifyReply> {
    await wire.prepare?.(request, this.deps);
    const completion = new Completion(request, reply, wire);
    if (wire.maxTokensCeiling) holdMaxTokens(this.deps.catalog, completion);
    const prompt = wire.promptTokens
      ? await wire.promptTokens(this.deps.catalog, completion.parsed, false)
      : await promptTokensOf(this.deps.catalog, completion.parsed);
    completion.promptTokens = prompt.tokens;
    completion.promptExact = prompt.exact;
    this.open(completion);
    try {
      await this.admitAndRoute(completion);
      await guardCompletionInput(this.guardChecks, completion);
      const kept = await this.cache?.lookup(completion);
      reply.raw.once('close', this.metrics.started());
      if (kept) return await this.answerKept(completion, kept);
      if (!completion.parsed.stream) {
        const answer = await this.executeWhole(completion);
        keepBodies(this.deps, completion, () => answer);
        return answer;
      }
      await relayStream(this.deps, completion, this.report);
      if (completion.cacheAnswer) this.cache?.keep(completion, { chat: completion.cacheAnswer });
      keepBodies(this.deps, completion, () => streamedAnswer(completion));
      return reply;
    } catch (error) {
      // A request that failed after auth's decision keeps its bodies too: what a stream sent before it failed, else none.
      keepBodies(this.deps, completion, () => (completion.parsed.stream ? streamedAnswer(completion) : ''));
      const span = completion.span;
      if (span) {
        span.setAttribute(
          'error.type',
          error instanceof RequestError ? (error.code ?? String(error.status)) : error instanceof GatewayError ? error.reason : 'internal_error',
        );
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      // A request refused before it reached a model (auth's denial, or admitted but routed nowhere:
      // a model that does not exist) is not metered; the request log shows it.
      // A request a guardrail refused is one too: it reached no model.
      const refused =
        completion.decision === undefined
          ? deniedKeyOf(error)
          : completion.routing === undefined || (error instanceof RequestError && error.code === 'content_policy_violation')
            ? decidedKeyOf(completion.decision)
            : undefined;
      if (refused && this.deps.refusals && error instanceof RequestError)
        this.deps.refusals.publish(refusalEvent(completion, refused, { status: error.status, code: error.code }));
      throw error;
    } finally {
      // A request that led others and kept nothing lets them ask their model.
      this.cache?.release(completion);
    }
  }

  /**
   * Answers a hit with the kept answer, whole or streamed as the caller asked, under the model
   * and deployment that made it, and reports it (a hit costs the operator's share of its price).
   */
  private async answerKept(completion: Completion, entry: CacheEntryOutput): Promise<string | FastifyReply> {
    const { deps } = this;
    const { wire } = completion;
    completion.answered = answeredModel(deps.catalog, completion.routing, entry.model_id);
    completion.provider = entry.provider ?? '';
    completion.deploymentId = entry.deployment_id ?? '';
    completion.usage = entry.usage ?? NO_USAGE;
    const chat = entry.chat ? { ...entry.chat, id: hitCompletionId() } : undefined;
    if (chat && wire.route === '/v1/chat/completions') completion.responseId = chat.id;
    if (completion.parsed.stream && chat) {
      replayStream(completion, chat, chat.id, this.report);
      keepBodies(deps, completion, () => streamedAnswer(completion));
      return completion.reply;
    }
    const answer = chat ? { response: chat, render: () => wire.renderWhole(completion, chat) } : wire.cachedWhole?.(completion, entry);
    if (!answer) throw new Error(`a kept answer of kind ${entry.answer ?? 'none'} for ${wire.route}`);
    this.report(completion, 'OUTCOME_COMPLETED');
    const body = await answer.render();
    keepBodies(deps, completion, () => body);
    return body;
  }

  /** The request's abort (the client went away) and its span (tracing on), ended with the response. */
  private open(completion: Completion): void {
    const { reply, parsed, wire } = completion;
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) completion.abort.abort();
    });
    // The parent of auth's, the router's, the executor's and metering's spans.
    const traceparent = completion.request.headers.traceparent;
    const span = this.tracing.startSpan(`${wire.operation} ${parsed.request.model ?? ''}`, {
      kind: SpanKind.SERVER,
      parent: typeof traceparent === 'string' ? traceparent : undefined,
      attributes: {
        'gen_ai.operation.name': wire.operation,
        'gen_ai.request.model': parsed.request.model ?? '',
        'http.request.method': 'POST',
        'http.route': wire.route,
        'gateway.stream': parsed.stream,
      },
    });
    completion.span = span;
    completion.traceparent = this.tracing.traceparentOf(span);
    if (span)
      reply.raw.once('close', () => {
        span.setAttribute('http.response.status_code', reply.statusCode);
        span.end();
      });
  }

  /** Admit and route at the same time; a key problem wins over any routing problem. */
  private async admitAndRoute(completion: Completion): Promise<void> {
    noteKeyChecked(completion.request);
    const [admitted, routed] = await Promise.allSettled([this.admit(completion), this.resolve(completion, completion.callerPolicy)]);
    if (admitted.status === 'rejected') throw admitted.reason;
    const decision = admitted.value;
    completion.decision = decision;
    completion.reservation = holdReservation(this.deps, completion.request, decision);
    // On the reply before any stream starts: the relay copies x-ratelimit-* onto the SSE head.
    void completion.reply.headers(rateLimitHeaders(decision));
    if (routed.status === 'rejected') throw routed.reason;
    let routing = routed.value;
    // The key's default policy is known only now; only `auto` requests of keys that have one and
    // name none themselves pay for a second routing call.
    if (routing.route && completion.callerPolicy === undefined && decision.routing_policy) {
      routing = await this.resolve(completion, decision.routing_policy);
    }
    // `auto` chooses within the key's allow-lists (a named model outside them auth refused).
    this.route(completion, allowedRouting(this.deps.catalog, routing, allowListsOf(decision)));
  }

  /** Admit: the key's check, reserving the request's tokens against its quota. */
  private admit(completion: Completion): Promise<CheckKeyResponseOutput> {
    const { deps } = this;
    const { apiKey, requestId, signal, traceparent } = completion;
    // Auth checks a named model against the key's allow-lists; `auto` chooses within them later.
    const named = completion.parsed.request.model ?? '';
    const model = named === 'auto' ? '' : named;
    const bounds = (promptTokens: number) => ({
      reserveTokens: this.reserved(completion, promptTokens),
      costBoundPicoUsd: this.costBound(completion, promptTokens),
    });
    return checkKey(deps, apiKey, requestId, { ...bounds(completion.promptTokens), signal, traceparent, model }).catch(async (error: unknown) => {
      // Too large for the key's tokens per minute on an estimate: the exact count decides.
      if (!(error instanceof RequestError && error.code === 'request_too_large') || completion.promptExact) throw error;
      const { wire, parsed } = completion;
      const exact = wire.promptTokens ? (await wire.promptTokens(deps.catalog, parsed, true)).tokens : await countBoundedPromptTokens(deps.catalog, parsed);
      return checkKey(deps, apiKey, requestId, { ...bounds(exact), signal, traceparent, model });
    });
  }

  /**
   * The most a request can cost: the tokens it reserves (its prompt, its largest completion) at the
   * dearest prices of the models that may answer it: the model it names and its fallbacks (the
   * request's, else the catalog's), or for `auto` any model of the catalog. auth holds it against
   * the key's and its team's budgets until the request is metered.
   */
  private costBound(completion: Completion, promptTokens: number): bigint {
    const { catalog } = this.deps;
    const { request, fallbacks } = completion.parsed;
    const named = request.model ?? '';
    const model = catalog.get(named);
    const candidates: ModelOutput[] =
      named === 'auto'
        ? [...catalog.list()]
        : model
          ? [model, ...(Array.isArray(fallbacks) ? fallbacks : (model.fallbacks ?? [])).flatMap((id) => catalog.get(id) ?? [])]
          : [];
    const pricings = candidates.flatMap((candidate) => (candidate.pricing ? [candidate.pricing] : []));
    return costBoundPicoUsd(pricings, promptTokens, this.reserved(completion, promptTokens) - promptTokens);
  }

  /** The tokens a request reserves: its prompt and the completion it may produce. */
  private reserved(completion: Completion, promptTokens: number): number {
    const { request, embeddings } = completion.parsed;
    // Embeddings produce no completion: their input is all they cost.
    if (embeddings) return promptTokens;
    return reservedTokens(
      promptTokens,
      request.max_tokens,
      this.deps.catalog.get(request.model ?? '')?.max_output_tokens,
      this.deps.config.EDGE_DEFAULT_COMPLETION_BUDGET_TOKENS,
    );
  }

  /** Route: the chosen model with its fallbacks, as the call to the executor. */
  private route(completion: Completion, routing: Routing): void {
    const { parsed, decision, span } = completion;
    completion.routing = routing;
    completion.answered = routing.model;
    if (completion.maxTokensCeiling !== undefined) parsed.request.max_tokens = fittedMaxTokens(completion.maxTokensCeiling, routing.model);
    if (span) {
      span.setAttribute('gateway.routed_to', routing.model.id ?? '');
      const route = routing.route;
      if (route)
        span.setAttributes({
          'gateway.auto.score': route.score ?? 0,
          'gateway.auto.tier': tierName(route.quality_tier) ?? route.tier ?? '',
          'gateway.auto.policy': route.policy ?? '',
        });
    }
    const fallbacks = fallbackChain(this.deps.catalog, completion, decision.catalog_fallbacks === true);
    if (routing.model.available === false && fallbacks.length === 0) throw modelUnavailable(routing);
    completion.execute = {
      request_id: completion.requestId,
      model_id: routing.model.id,
      request: parsed.request,
      key_id: decision.key_id,
      fallbacks,
      legacy_functions: parsed.legacyFunctions,
    };
  }

  /** Execute, whole: one call to an executor (another replica when one is lost), then report. */
  private async executeWhole(completion: Completion): Promise<string> {
    const { deps } = this;
    const { requestId, signal, traceparent, wire } = completion;
    const options = { deadlineMs: deps.config.EDGE_COMPLETION_DEADLINE_MS, requestId, signal, traceparent };
    const result = await withReplicaRetry(signal, () =>
      wire.executeWhole
        ? wire.executeWhole(deps, completion, options)
        : deps.completions.call('complete', completion.execute, options).then(chatAnswer(completion)),
    ).catch((error: unknown) => {
      // A request that reached a model and failed (or whose caller left) is metered too: a
      // request with no usage, counted among the key's errors unless it was cancelled.
      const cancelled = signal.aborted;
      const requestError = cancelled ? undefined : toRequestError(error instanceof GatewayError ? error : GatewayError.fromServiceError(error));
      completion.errorCode = requestError ? (requestError.code ?? 'internal_error') : undefined;
      completion.httpStatus = requestError?.status;
      completion.usage = NO_USAGE;
      this.report(completion, cancelled ? 'OUTCOME_CANCELLED' : 'OUTCOME_FAILED');
      throw error;
    });
    completion.answered = answeredModel(deps.catalog, completion.routing, result.model_id);
    completion.provider = result.provider ?? '';
    completion.deploymentId = result.deployment_id ?? '';
    completion.attempts = result.attempts ?? [];
    completion.usage = result.usage ?? undefined;
    if (result.response) await guardWholeAnswer(completion, result.response);
    this.report(completion, 'OUTCOME_COMPLETED');
    if (result.response) this.cache?.keep(completion, { chat: result.response });
    else if (result.embeddings) this.cache?.keep(completion, { embeddings: result.embeddings });
    return await result.render();
  }
}

/** A Complete call's answer, rendered by the completion's wire. */
function chatAnswer(completion: Completion): (result: ExecuteResponseOutput) => WholeAnswer {
  return (result) => {
    const response = result.response!;
    // The chat completions wire answers with the upstream's id (chatCompletionJson).
    if (completion.wire.route === '/v1/chat/completions') completion.responseId = response.id ?? undefined;
    return {
      model_id: result.model_id,
      provider: result.provider,
      deployment_id: result.deployment_id,
      attempts: result.attempts,
      usage: response.usage,
      response,
      render: () => completion.wire.renderWhole(completion, response),
    };
  };
}

/** A `max_tokens` ceiling lowered to what a model can produce (a model of unknown output: as it is). */
function fittedMaxTokens(ceiling: number, model: ModelOutput): number {
  const largest = model.max_output_tokens ?? 0;
  return largest > 0 ? Math.min(ceiling, largest) : ceiling;
}

/**
 * A wire's `max_tokens` that is only a ceiling (Claude Code sends 32000 whatever model the gateway
 * maps it to) is fitted to the model rather than refused: a named model's at once; for `auto` it
 * is held back while the model is chosen (routing on it would leave only the models of the largest
 * output), and fitted to the chosen one in route.
 */
function holdMaxTokens(catalog: EdgeDependencies['catalog'], completion: Completion): void {
  const { request } = completion.parsed;
  if (request.max_tokens === undefined) return;
  const named = catalog.get(request.model ?? '');
  if (named) {
    request.max_tokens = fittedMaxTokens(request.max_tokens, named);
    return;
  }
  completion.maxTokensCeiling = request.max_tokens;
  delete request.max_tokens;
}

/** The 503 of a model none of whose deployments is healthy, when no fallback may answer instead. */
function modelUnavailable(routing: Routing): RequestError {
  const retryAfterMs = Math.max(1000, routing.model.retry_after_ms ?? 1000);
  return new RequestError(
    503,
    `The model \`${routing.model.id}\` is temporarily unavailable: none of its deployments is healthy. Retry later, or send "fallbacks": true to let another model answer.`,
    {
      code: 'model_unavailable',
      param: 'model',
      headers: retryAfterHeaders(retryAfterMs),
    },
  );
}

/** The key (and its team) of auth's decision on a request. */
function decidedKeyOf(decision: CheckKeyResponseOutput): { keyId: string; teamId: string } | undefined {
  return decision.key_id ? { keyId: decision.key_id, teamId: decision.team_id ?? '' } : undefined;
}
