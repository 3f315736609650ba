/**
 * POST /v1/chat/completions: validate, ask auth and (for `auto`) the router at the same time, run
 * the request on an executor, answer whole or as SSE, and publish the usage event.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { capabilityProblem as catalogCapabilityProblem, costPicoUsd, picoUsdToUsd } from '@gateway/catalog';
import { GatewayError, GrpcStatus, callMetadata, callUnary, withoutCallerStack } from '@gateway/grpc';
import type {
  ChatChunkOutput,
  CheckKeyResponseOutput,
  ExecuteRequest,
  ExecutionAttemptOutput,
  ExecuteStreamEventOutput,
  ModelOutput,
  RouteRequest,
  RouteResponseOutput,
  UsageEvent,
  UsageOutput,
} from '@gateway/proto';
import { countPromptTokensAsync, countPromptTokensWithinAsync, countTextTokensAsync, promptTokenBounds, routingText } from '@gateway/tokens';
import type { EdgeDependencies } from '../app.js';
import { RequestError, errorBody, toRequestError } from '../errors.js';
import { chatCompletionJson, chunkJson, usageChunkJson, type GatewayInfo, type StreamIdentity } from '@gateway/openai-wire';
import { parseChatRequest, type ParsedChatRequest } from '../wire/parse-chat-request.js';
import { bearerKey, checkKey, holdReservation, noteKeyChecked, releaseReservation, reservedTokens } from './authenticate.js';
import { BUDGET_REMAINING_HEADER, rateLimitHeaders } from '../rate-limit-headers.js';
import { GenAiMetrics, planName } from '../genai-metrics.js';
import { tierName } from './models.js';
import { NO_TRACING, SpanKind, SpanStatusCode, type Span } from '@gateway/observability';

/** What a completion's metrics, span and usage event need when it ends. */
interface Observed {
  plan: string;
  routedModel: string;
  firstTokenMs?: number;
  span?: Span;
  traceparent?: string;
  /** How `auto` chose, for the usage event (the latest requests show it). */
  auto?: UsageEvent['auto'];
  /** For a failed request: the error code its caller was answered with. */
  errorCode?: string;
}

/** The usage of a request that produced nothing the gateway could count. */
const NO_USAGE: UsageOutput = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };

/** What the router or the edge's catalog decided. */
interface Routing {
  model: ModelOutput;
  route?: RouteResponseOutput;
}

/** Checks that the chosen model can serve the request, before any upstream call. */
function checkCapabilities(model: ModelOutput, parsed: ParsedChatRequest, promptTokens: number): void {
  const problem = capabilityProblem(model, parsed, promptTokens);
  if (problem) throw problem;
}

/** Why a model cannot serve the request (the catalog's one rule set, shared with the router), or undefined when it can. */
function capabilityProblem(model: ModelOutput, parsed: ParsedChatRequest, promptTokens: number): RequestError | undefined {
  const problem = catalogCapabilityProblem(model, {
    tools: parsed.needsTools,
    vision: parsed.needsVision,
    jsonMode: parsed.needsJsonMode,
    stream: parsed.request.stream === true,
    promptTokens,
    maxTokens: parsed.request.max_tokens,
    maxTokensParam: parsed.request.max_tokens_is_completion_tokens ? 'max_completion_tokens' : 'max_tokens',
  });
  return problem && new RequestError(400, problem.message, { param: problem.param, code: problem.code });
}

/** The smallest and largest context windows of a catalog's models (0 when none has one). */
interface CatalogWindows {
  smallest: number;
  largest: number;
}

const windowsOfList = new WeakMap<readonly ModelOutput[], CatalogWindows>();

/** The catalog's windows, computed once per catalog snapshot. */
function catalogWindows(catalog: EdgeDependencies['catalog']): CatalogWindows {
  const models = catalog.list();
  let windows = windowsOfList.get(models);
  if (!windows) {
    const sizes = models.map((model) => model.context_window ?? 0).filter((size) => size > 0);
    windows = { smallest: sizes.length > 0 ? Math.min(...sizes) : 0, largest: sizes.length > 0 ? Math.max(...sizes) : 0 };
    windowsOfList.set(models, windows);
  }
  return windows;
}

/**
 * The prompt tokens a request is reserved and checked with. Exact counting is needed only where
 * the number reaches the caller: when the prompt might not fit the context window of every model
 * that could serve it. Otherwise (the prompt's upper bound, its UTF-8 bytes, fits) the cheap
 * estimate is used, and the reservation is settled with the provider's reported usage.
 */
async function promptTokensOf(catalog: EdgeDependencies['catalog'], parsed: ParsedChatRequest): Promise<{ tokens: number; exact: boolean }> {
  const bounds = promptTokenBounds(parsed.request);
  const named = catalog.get(parsed.request.model ?? '');
  // The window every candidate has: the named model's (none: no window check), else the smallest.
  const window = named ? named.context_window || Number.POSITIVE_INFINITY : catalogWindows(catalog).smallest;
  if (bounds.upper + (parsed.request.max_tokens ?? 0) <= window) return { tokens: bounds.estimate, exact: false };
  return { tokens: await countBoundedPromptTokens(catalog, parsed), exact: true };
}

/**
 * The prompt tokens of a request, counted no further than any model could take: the named
 * model's context window, else (auto, or an id the catalog lacks) the largest in the catalog. A
 * prompt past that is refused here, so a huge body costs a bounded share of the tokenizer.
 */
async function countBoundedPromptTokens(catalog: EdgeDependencies['catalog'], parsed: ParsedChatRequest): Promise<number> {
  const named = catalog.get(parsed.request.model ?? '')?.context_window;
  const limit = named || catalogWindows(catalog).largest || Number.POSITIVE_INFINITY;
  // In time slices: a prompt of megabytes never holds the event loop (a small one takes no slice).
  const tokens = await countPromptTokensWithinAsync(parsed.request, limit);
  if (tokens !== undefined) return tokens;
  const whose = named ? "This model's" : "The largest model's";
  throw new RequestError(
    400,
    `${whose} maximum context length is ${limit} tokens. However, your messages resulted in more than ${limit} tokens. Please reduce the length of the messages.`,
    { param: 'messages', code: 'context_length_exceeded' },
  );
}

function modelNotFound(modelId: string): RequestError {
  return new RequestError(404, `The model \`${modelId}\` does not exist or you do not have access to it.`, { param: 'model', code: 'model_not_found' });
}

/** Registers the route. */
export function registerChatCompletions(app: FastifyInstance, deps: EdgeDependencies): void {
  const { config, catalog } = deps;
  const metrics = new GenAiMetrics(deps.registry, { keyId: config.EDGE_METRICS_KEY_ID });
  const tracing = deps.tracing ?? NO_TRACING;

  async function resolve(
    parsed: ParsedChatRequest,
    promptTokens: number,
    requestId: string,
    signal: AbortSignal,
    policy: string | undefined,
    traceparent?: string,
  ): Promise<Routing> {
    const modelId = parsed.request.model ?? '';
    if (modelId !== 'auto' && catalog.ready) {
      const model = catalog.get(modelId);
      if (!model) throw modelNotFound(modelId);
      checkCapabilities(model, parsed, promptTokens);
      return { model };
    }
    const route = await callUnary<RouteRequest, RouteResponseOutput>(
      deps.router,
      deps.router.Route,
      {
        request_id: requestId,
        model: modelId,
        prompt_text: modelId === 'auto' ? routingText(parsed.request.messages ?? []) : '',
        policy: modelId === 'auto' ? (policy ?? '') : '',
        traits: {
          needs_tools: parsed.needsTools,
          needs_vision: parsed.needsVision,
          needs_json_mode: parsed.needsJsonMode,
          stream: parsed.stream,
          prompt_tokens: promptTokens,
          max_tokens: parsed.request.max_tokens ?? 0,
        },
      },
      { deadlineMs: config.EDGE_CONTROL_DEADLINE_MS, requestId, signal, traceparent },
    ).catch((error: unknown) => {
      // The router names its own field; the caller sent it as route_policy (or x-route-policy).
      if (error instanceof GatewayError && error.param === 'policy') {
        throw new RequestError(400, error.message, { param: 'route_policy', code: error.reason });
      }
      throw error;
    });
    const routedId = route.model_id ?? '';
    const model = catalog.get(routedId) ?? ({ id: routedId, pricing: {}, capabilities: {}, fallbacks: [] } as unknown as ModelOutput);
    if (catalog.ready) checkCapabilities(model, parsed, promptTokens);
    return { model, route };
  }

  /** The `gateway` object: the model that answered, what it cost, and how it was chosen. */
  function gatewayInfo(routing: Routing, answered: ModelOutput, attempts: readonly ExecutionAttemptOutput[], latencyMs: number, costPico: bigint): GatewayInfo {
    const info: GatewayInfo = { routed_to: answered.id ?? '', latency_ms: Math.round(latencyMs * 100) / 100, cost_usd: picoUsdToUsd(costPico) };
    const route = routing.route;
    if (route && route.score !== undefined) {
      info.auto = {
        score: route.score ?? null,
        policy: route.policy ?? 'balanced',
        tier: tierName(route.quality_tier) ?? (route.tier || null),
        reason: route.reason || null,
      };
    }
    if (attempts.length > 0) info.tried = attempts.map((attempt) => ({ model: attempt.model_id ?? '', reason: attempt.reason ?? '' }));
    return info;
  }

  /** The catalog entry of the model that answered (the primary, or a fallback). */
  function answeredModel(routing: Routing, modelId: string | undefined): ModelOutput {
    if (!modelId || modelId === routing.model.id) return routing.model;
    return catalog.get(modelId) ?? ({ ...routing.model, id: modelId } as ModelOutput);
  }

  /**
   * The models to try after the primary: the caller's list, or with `fallbacks: true` (or no
   * `fallbacks` from a key whose plan or override turns chains on) the catalog's chain of the model
   * (for `auto`, the router's capable alternatives). Listed ids must exist and be
   * able to serve the request; chain members that cannot are skipped.
   */
  function fallbackChain(parsed: ParsedChatRequest, routing: Routing, promptTokens: number, keyDefault: boolean): string[] {
    const primary = routing.model.id ?? '';
    // Silence means the key's (or its plan's) default: the catalog's chain, or none.
    const requested = parsed.fallbacks ?? keyDefault;
    if (Array.isArray(requested)) {
      const chain: string[] = [];
      requested.forEach((id, index) => {
        if (catalog.ready) {
          const model = catalog.get(id);
          if (!model)
            throw new RequestError(404, `The model \`${id.slice(0, 256)}\` in 'fallbacks' does not exist or you do not have access to it.`, {
              param: `fallbacks[${index}]`,
              code: 'model_not_found',
            });
          const problem = capabilityProblem(model, parsed, promptTokens);
          if (problem) throw new RequestError(400, `'fallbacks[${index}]': ${problem.message}`, { param: `fallbacks[${index}]`, code: problem.code });
        }
        if (id !== primary && !chain.includes(id)) chain.push(id);
      });
      return chain;
    }
    if (requested !== true) return [];
    const candidates = routing.route ? routing.route.fallbacks : routing.model.fallbacks;
    return candidates.filter((id) => {
      if (id === primary) return false;
      const model = catalog.get(id);
      return model !== undefined && capabilityProblem(model, parsed, promptTokens) === undefined;
    });
  }

  /**
   * Publishes a request's usage event. Its id is drawn by the gateway for each request (eventId),
   * never the caller's x-request-id: metering de-duplicates on it, so an id a caller could repeat
   * or forge would let every request but one go unbilled.
   */
  function publishUsage(
    eventId: string,
    requestId: string,
    receivedAtMs: number,
    latencyMs: number,
    keyId: string,
    answered: ModelOutput,
    parsed: ParsedChatRequest,
    usage: UsageOutput | undefined,
    provider: string,
    outcome: UsageEvent['outcome'],
    costPico: bigint,
    reservationId: string,
    observed: Observed,
    attempts: readonly ExecutionAttemptOutput[],
  ): void {
    const span = observed.span;
    if (span) {
      span.setAttributes({
        'gen_ai.response.model': answered.id ?? '',
        'gen_ai.provider.name': answered.provider || provider,
        'gen_ai.usage.input_tokens': usage?.prompt_tokens ?? 0,
        'gen_ai.usage.output_tokens': usage?.completion_tokens ?? 0,
        'gateway.cost_usd': picoUsdToUsd(costPico),
        'gateway.outcome': outcome ?? '',
      });
      if (observed.firstTokenMs !== undefined) span.setAttribute('gateway.time_to_first_token_ms', observed.firstTokenMs);
      for (const attempt of attempts)
        span.addEvent('gateway.fallback', { 'gateway.fallback.from_model': attempt.model_id ?? '', 'gateway.fallback.reason': attempt.reason ?? '' });
    }
    metrics.observe({
      requestModel: parsed.request.model ?? '',
      responseModel: answered.id ?? '',
      routedModel: observed.routedModel,
      provider: answered.provider || provider,
      plan: observed.plan,
      keyId,
      stream: parsed.stream,
      errorType: outcome === 'OUTCOME_COMPLETED' ? '' : outcome === 'OUTCOME_CANCELLED' ? 'cancelled' : 'failed',
      durationSeconds: latencyMs / 1000,
      ...(observed.firstTokenMs !== undefined ? { firstTokenSeconds: observed.firstTokenMs / 1000 } : {}),
      inputTokens: usage?.prompt_tokens ?? 0,
      outputTokens: usage?.completion_tokens ?? 0,
      costUsd: picoUsdToUsd(costPico),
    });
    deps.usage.publish({
      reservation_id: reservationId,
      event_id: eventId,
      request_id: requestId,
      key_id: keyId,
      model_id: answered.id,
      provider,
      usage,
      received_at_ms: receivedAtMs,
      latency_ms: Math.round(latencyMs),
      stream: parsed.stream,
      outcome,
      requested_model: parsed.request.model,
      reported_cost_pico_usd: Number(costPico),
      ...(observed.traceparent ? { traceparent: observed.traceparent } : {}),
      fallback_attempts: attempts.length,
      ...(observed.auto ? { auto: observed.auto } : {}),
      ...(observed.errorCode ? { error_code: observed.errorCode } : {}),
    });
  }

  // A request that fails after auth reserved its tokens settles with 0: it produced nothing.
  app.addHook('onError', async (request) => releaseReservation(request));

  // A request without a key is refused before its body is read and parsed.
  const requireKey = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    try {
      bearerKey(request);
      done();
    } catch (error) {
      done(error as Error);
    }
  };
  app.post('/v1/chat/completions', { onRequest: requireKey }, async (request: FastifyRequest, reply: FastifyReply) => {
    const receivedAtMs = Date.now();
    const requestId = request.id;
    const eventId = randomUUID();
    const apiKey = bearerKey(request);
    const parsed = parseChatRequest(request.body);
    const prompt = await promptTokensOf(catalog, parsed);
    const promptTokens = prompt.tokens;
    const callerPolicy = routePolicy(request, parsed);

    const abort = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    // The request's span (tracing on): the parent of auth's, the router's, the executor's and
    // metering's; ended when the response is over.
    const span = tracing.startSpan(`chat ${parsed.request.model ?? ''}`, {
      kind: SpanKind.SERVER,
      parent: typeof request.headers.traceparent === 'string' ? request.headers.traceparent : undefined,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': parsed.request.model ?? '',
        'http.request.method': 'POST',
        'http.route': '/v1/chat/completions',
        'gateway.stream': parsed.stream,
      },
    });
    const traceparent = tracing.traceparentOf(span);
    if (span)
      reply.raw.once('close', () => {
        span.setAttribute('http.response.status_code', reply.statusCode);
        span.end();
      });
    try {
      // Auth and routing at the same time; a key problem wins over any routing problem.
      noteKeyChecked(request);
      const reserve = (tokens: number) =>
        reservedTokens(
          tokens,
          parsed.request.max_tokens,
          catalog.get(parsed.request.model ?? '')?.max_output_tokens,
          config.EDGE_DEFAULT_COMPLETION_BUDGET_TOKENS,
        );
      const [authResult, routeResult] = await Promise.allSettled([
        checkKey(deps, apiKey, requestId, reserve(promptTokens), abort.signal, traceparent).catch(async (error: unknown) => {
          // Too large for the key's tokens per minute on an estimate: the exact count decides.
          if (!(error instanceof RequestError && error.code === 'request_too_large') || prompt.exact) throw error;
          return checkKey(deps, apiKey, requestId, reserve(await countBoundedPromptTokens(catalog, parsed)), abort.signal, traceparent);
        }),
        resolve(parsed, promptTokens, requestId, abort.signal, callerPolicy, traceparent),
      ]);
      if (authResult.status === 'rejected') throw authResult.reason;
      const decision: CheckKeyResponseOutput = authResult.value;
      const reservation = holdReservation(deps, request, decision);
      // On the reply before any stream starts: streamCompletion copies x-ratelimit-* onto the SSE head.
      void reply.headers(rateLimitHeaders(decision));
      if (routeResult.status === 'rejected') throw routeResult.reason;
      let routing = routeResult.value;
      // The key's default policy is known only now; only `auto` requests of keys that have one and
      // name none themselves pay for a second routing call.
      if (routing.route && callerPolicy === undefined && decision.routing_policy) {
        routing = await resolve(parsed, promptTokens, requestId, abort.signal, decision.routing_policy, traceparent);
      }
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

      const fallbacks = fallbackChain(parsed, routing, promptTokens, decision.catalog_fallbacks === true);
      if (routing.model.available === false && fallbacks.length === 0) {
        const retryAfterMs = Math.max(1000, routing.model.retry_after_ms ?? 1000);
        throw new RequestError(
          503,
          `The model \`${routing.model.id}\` is temporarily unavailable: none of its deployments is healthy. Retry later, or send "fallbacks": true to let another model answer.`,
          {
            code: 'model_unavailable',
            param: 'model',
            headers: { 'retry-after': String(Math.ceil(retryAfterMs / 1000)), 'retry-after-ms': String(retryAfterMs) },
          },
        );
      }

      const execute: ExecuteRequest = {
        request_id: requestId,
        model_id: routing.model.id,
        request: parsed.request,
        key_id: decision.key_id,
        fallbacks,
        legacy_functions: parsed.legacyFunctions,
      };
      const keyId = decision.key_id ?? '';
      const route = routing.route;
      const auto =
        route && route.score !== undefined
          ? { score: route.score ?? 0, tier: tierName(route.quality_tier) ?? route.tier ?? '', policy: route.policy ?? '' }
          : undefined;
      const observed: Observed = { plan: planName(decision.plan), routedModel: routing.model.id ?? '', span, traceparent, auto };
      const over = metrics.started();
      reply.raw.once('close', over);

      if (!parsed.stream) {
        const result = await withReplicaRetry(abort.signal, () =>
          deps.completions.call('complete', execute, { deadlineMs: config.EDGE_COMPLETION_DEADLINE_MS, requestId, signal: abort.signal, traceparent }),
        ).catch((error: unknown) => {
          // A request that reached a model and failed (or whose caller left) is metered too: a
          // request with no usage, counted among the key's errors unless it was cancelled.
          const cancelled = abort.signal.aborted;
          const errorCode = cancelled
            ? undefined
            : (toRequestError(error instanceof GatewayError ? error : GatewayError.fromServiceError(error)).code ?? 'internal_error');
          publishUsage(
            eventId,
            requestId,
            receivedAtMs,
            reply.elapsedTime,
            keyId,
            routing.model,
            parsed,
            NO_USAGE,
            '',
            cancelled ? 'OUTCOME_CANCELLED' : 'OUTCOME_FAILED',
            0n,
            reservation.handOff(),
            { ...observed, errorCode },
            [],
          );
          throw error;
        });
        const response = result.response!;
        const answered = answeredModel(routing, result.model_id);
        const costPico = costPicoUsd((answered.pricing ?? {}) as never, response.usage ?? {});
        const latencyMs = reply.elapsedTime;
        const body = JSON.stringify(chatCompletionJson(response, gatewayInfo(routing, answered, result.attempts, latencyMs, costPico), parsed.legacyFunctions));
        publishUsage(
          eventId,
          requestId,
          receivedAtMs,
          latencyMs,
          keyId,
          answered,
          parsed,
          response.usage,
          result.provider ?? '',
          'OUTCOME_COMPLETED',
          costPico,
          reservation.handOff(),
          observed,
          result.attempts,
        );
        void reply
          .header('content-type', 'application/json')
          .header('openai-processing-ms', String(Math.round(latencyMs)))
          .header('openai-model', answered.id ?? '');
        return body;
      }

      await streamCompletion(
        request,
        reply,
        execute,
        routing,
        parsed,
        abort,
        traceparent,
        (answered, attempts, usage, provider, outcome, firstTokenMs, errorCode) => {
          const costPico = costPicoUsd((answered.pricing ?? {}) as never, usage ?? {});
          const latencyMs = reply.elapsedTime;
          publishUsage(
            eventId,
            requestId,
            receivedAtMs,
            latencyMs,
            keyId,
            answered,
            parsed,
            usage,
            provider,
            outcome,
            costPico,
            reservation.handOff(),
            { ...observed, ...(firstTokenMs !== undefined ? { firstTokenMs } : {}), errorCode },
            attempts,
          );
          return gatewayInfo(routing, answered, attempts, latencyMs, costPico);
        },
      );
      return reply;
    } catch (error) {
      if (span) {
        span.setAttribute(
          'error.type',
          error instanceof RequestError ? (error.code ?? String(error.status)) : error instanceof GatewayError ? error.reason : 'internal_error',
        );
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      throw error;
    }
  });

  /**
   * Streams the executor's chunks as SSE. Headers are written only when the first event arrives,
   * so a failure before the first byte is still a proper HTTP error. The chunk that carries a
   * finish_reason is held back until the stream ends, so that the `gateway` object rides on the
   * last chunk before [DONE]; every other chunk is written as soon as it arrives. An executor
   * replica that dies before its first event is replaced by another, as for whole requests.
   */
  async function streamCompletion(
    request: FastifyRequest,
    reply: FastifyReply,
    execute: ExecuteRequest,
    routing: Routing,
    parsed: ParsedChatRequest,
    abort: AbortController,
    traceparent: string | undefined,
    finish: (
      answered: ModelOutput,
      attempts: readonly ExecutionAttemptOutput[],
      usage: UsageOutput | undefined,
      provider: string,
      outcome: UsageEvent['outcome'],
      firstTokenMs: number | undefined,
      errorCode?: string,
    ) => GatewayInfo,
  ): Promise<void> {
    const raw = reply.raw;
    const identity: StreamIdentity = {
      id: '',
      created: 0,
      model: routing.model.id ?? '',
      includeUsage: parsed.includeUsage,
      legacyFunctions: parsed.legacyFunctions,
    };
    let started = false;
    // The JSON of the latest chunk that carries a finish_reason, held back to carry `gateway`.
    let held: string | undefined;
    let streamedText = '';
    let keepAlive: NodeJS.Timeout | undefined;
    let answered = routing.model;
    let attempts: readonly ExecutionAttemptOutput[] = [];
    let provider = '';
    let failureUsage: UsageOutput | undefined;
    // When the first chunk of content left (reply.elapsedTime), for the time to first token.
    let firstTokenMs: number | undefined;

    // Events that arrive in one burst (several gRPC messages read at once) leave in one socket
    // write: the response is corked at the first event and uncorked in the same loop turn's check
    // phase (setImmediate), after the promise chain of the stream's iterator has handed over every
    // message already read; process.nextTick uncorked between two messages of one read.
    let corked = false;
    const uncork = () => {
      corked = false;
      raw.uncork();
    };
    const write = async (text: string) => {
      if (!corked) {
        corked = true;
        raw.cork();
        setImmediate(uncork);
      }
      if (!raw.write(text) && !raw.destroyed) {
        await new Promise<void>((resolve) => {
          const done = () => {
            raw.off('drain', done);
            raw.off('close', done);
            resolve();
          };
          raw.on('drain', done);
          raw.on('close', done);
        });
      }
    };
    const armKeepAlive = () => {
      if (keepAlive) keepAlive.refresh();
      else
        keepAlive = setInterval(() => {
          if (!raw.destroyed) raw.write(': ping\n\n');
        }, config.EDGE_STREAM_KEEPALIVE_MS);
    };
    const begin = (first: ChatChunkOutput | undefined) => {
      if (started) return;
      started = true;
      clearTimeout(commitTimer);
      // Set from the executor's start event when it sent them.
      identity.id ||= first?.id || `chatcmpl-${request.id}`;
      identity.created ||= Number(first?.created) || Math.floor(Date.now() / 1000);
      identity.model = answered.id ?? identity.model;
      reply.hijack();
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
        'openai-model': identity.model,
        'openai-processing-ms': String(Math.round(reply.elapsedTime)),
        ...corsHeaders(reply),
      });
      armKeepAlive();
    };
    const textOf = (chunk: ChatChunkOutput) => {
      for (const choice of chunk.choices) {
        if (choice.delta?.content) streamedText += choice.delta.content;
        for (const toolCall of choice.delta?.tool_calls ?? []) streamedText += toolCall.function?.arguments ?? '';
      }
    };
    // Writes a chunk's JSON, except the latest one that finishes a choice, which is held (see above).
    const relay = async (json: string, finishes: boolean) => {
      if (held !== undefined) {
        await write(`data: ${held}\n\n`);
        held = undefined;
      }
      if (finishes) held = json;
      else await write(`data: ${json}\n\n`);
    };

    // A model silent for a whole keep-alive interval before its first chunk (a long time to first
    // token) gets the stream committed and pinged, so that clients and proxies do not time out; a
    // failure after that is an error event rather than a status.
    const commitTimer = setTimeout(() => {
      if (started || raw.destroyed) return;
      begin(undefined);
      raw.write(': ping\n\n');
    }, config.EDGE_STREAM_KEEPALIVE_MS);

    // A StreamComplete call of its own, made only while no CompleteCalls stream is open.
    let call: ReturnType<typeof deps.executor.StreamComplete> | undefined;
    const cancel = () => call?.cancel();
    abort.signal.addEventListener('abort', cancel, { once: true });
    try {
      for (let replicaTry = 0; ; replicaTry += 1) {
        const callOptions = { deadlineMs: config.EDGE_COMPLETION_DEADLINE_MS, requestId: request.id, signal: abort.signal, traceparent };
        let events: AsyncIterable<ExecuteStreamEventOutput> | undefined = deps.completions.stream('stream', execute, { ...callOptions, window: STREAM_WINDOW });
        if (!events) {
          const { metadata, callOptions: grpcOptions } = callMetadata(callOptions);
          call = withoutCallerStack(() => deps.executor.StreamComplete(execute, metadata, grpcOptions));
          events = call as AsyncIterable<ExecuteStreamEventOutput>;
        }
        let received = false;
        // Set at the end event. The loop then runs on to the stream's own end (its status follows
        // at once): leaving the loop early would destroy a StreamComplete call, which builds an
        // AbortError with its stack trace for every stream.
        let completed = false;
        try {
          for await (const event of events) {
            received = true;
            if (completed) continue;
            if (event.start) {
              answered = answeredModel(routing, event.start.model_id);
              attempts = event.start.attempts;
              provider = event.start.provider ?? '';
              if (event.start.completion_id && !started) {
                identity.id = event.start.completion_id;
                identity.created = Number(event.start.created) || 0;
              }
            }
            if (event.rendered) {
              // Chunks the executor rendered: written as they are.
              if (!started) begin(undefined);
              firstTokenMs ??= reply.elapsedTime;
              streamedText += event.rendered.text ?? '';
              for (const chunk of event.rendered.chunks) await relay(chunk.json ?? '', chunk.finishes === true);
              armKeepAlive();
            } else if (event.chunk) {
              // A chunk as a message, from an executor that does not render: rendered here.
              const chunk = event.chunk;
              if (!started) begin(chunk);
              firstTokenMs ??= reply.elapsedTime;
              textOf(chunk);
              await relay(
                JSON.stringify(chunkJson(chunk, identity)),
                chunk.choices.some((choice) => choice.finish_reason && choice.finish_reason !== 'FINISH_REASON_UNSPECIFIED'),
              );
              armKeepAlive();
            } else if (event.failure) {
              // The executor's own count of what was generated before it failed; its status follows.
              failureUsage = event.failure.usage;
              provider = event.failure.provider ?? provider;
            } else if (event.end) {
              if (!started) begin(undefined);
              const end = event.end;
              if (end.model_id) answered = answeredModel(routing, end.model_id);
              if (end.attempts.length > 0) attempts = end.attempts;
              const gateway = finish(answered, attempts, end.usage, end.provider ?? provider, 'OUTCOME_COMPLETED', firstTokenMs);
              let tail = '';
              if (held !== undefined) tail += `data: ${parsed.includeUsage ? held : withGateway(held, gateway)}\n\n`;
              if (parsed.includeUsage) tail += `data: ${JSON.stringify(usageChunkJson(end.usage, identity, gateway))}\n\n`;
              else if (!held) tail += `data: ${JSON.stringify({ ...chunkJson({ choices: [] } as unknown as ChatChunkOutput, identity), gateway })}\n\n`;
              held = undefined;
              raw.end(`${tail}data: [DONE]\n\n`);
              completed = true;
            }
          }
        } catch (error) {
          // The answer is complete: what the stream does after its end event changes nothing.
          if (completed) return;
          if (!received && replicaTry < REPLICA_RETRIES && !abort.signal.aborted && isReplicaLoss(error)) {
            request.log.warn('executor replica lost before the stream began; retrying on another');
            continue;
          }
          throw error;
        }
        if (completed) return;
        // The executor closed the stream without its end event: never end cleanly as if complete.
        throw GatewayError.of('upstream_error', 'The model stream ended unexpectedly.');
      }
    } catch (error) {
      if (abort.signal.aborted) {
        // The client went away: meter what was generated before it left.
        finish(answered, attempts, await estimatedUsage(execute, streamedText), provider, 'OUTCOME_CANCELLED', firstTokenMs);
        return;
      }
      const requestError = toRequestError(error instanceof GatewayError ? error : GatewayError.fromServiceError(error));
      if (!started) {
        // Nothing reached the caller: the request is metered as an error with what the executor
        // counted, if anything, and answered with a status.
        finish(answered, attempts, failureUsage ?? NO_USAGE, provider, 'OUTCOME_FAILED', firstTokenMs, requestError.code ?? 'internal_error');
        throw requestError;
      }
      request.log.warn({ err: (error as Error).message }, 'stream failed after the first byte');
      finish(
        answered,
        attempts,
        failureUsage ?? (await estimatedUsage(execute, streamedText)),
        provider,
        'OUTCOME_FAILED',
        firstTokenMs,
        requestError.code ?? 'internal_error',
      );
      if (!raw.destroyed) raw.end(`data: ${errorBody(requestError)}\n\n`);
    } finally {
      clearTimeout(commitTimer);
      if (keepAlive) clearInterval(keepAlive);
      abort.signal.removeEventListener('abort', cancel);
    }
  }
}

/**
 * How many events of a streamed completion may travel ahead of its client: each event is one
 * batch of the chunks the upstream delivered together, so this bounds what the edge buffers for a
 * slow client while the upstream is held back.
 */
const STREAM_WINDOW = 8;

/** How many times a request moves to another executor replica after losing one. */
const REPLICA_RETRIES = 2;

/**
 * Whether a failure is an executor replica lost before it answered anything: a transport-level
 * UNAVAILABLE with no ErrorInfo trailer (killed, refused the connection, went away). Such a call
 * is safe to send to another replica; a status with a trailer (the executor decided: upstream
 * errors, model_unavailable) is not, as it already retried and fell back itself.
 */
function isReplicaLoss(error: unknown): boolean {
  const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
  return failure.code === GrpcStatus.UNAVAILABLE && failure.reason === 'service_unavailable';
}

/** Runs a whole-response call, moving to another replica when one is lost before answering. */
async function withReplicaRetry<Result>(signal: AbortSignal, run: () => Promise<Result>): Promise<Result> {
  for (let replicaTry = 0; ; replicaTry += 1) {
    try {
      return await run();
    } catch (error) {
      if (replicaTry >= REPLICA_RETRIES || signal.aborted || !isReplicaLoss(error)) throw error;
    }
  }
}

/** The caller's routing policy: the body's `route_policy`, else the `x-route-policy` header. */
function routePolicy(request: FastifyRequest, parsed: ParsedChatRequest): string | undefined {
  if (parsed.routePolicy !== undefined) return parsed.routePolicy;
  const header = request.headers['x-route-policy'];
  return typeof header === 'string' && header.length > 0 && header.length <= 64 ? header : undefined;
}

/** Usage of a stream that did not finish: the real prompt count and the tokens streamed so far. */
async function estimatedUsage(execute: ExecuteRequest, streamedText: string): Promise<UsageOutput> {
  const prompt = await countPromptTokensAsync(execute.request!);
  const completion = await countTextTokensAsync(streamedText);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, cached_tokens: 0, reasoning_tokens: 0 };
}

/** A chunk's JSON with the `gateway` object added as its last member. */
function withGateway(chunkJsonText: string, gateway: GatewayInfo): string {
  return `${chunkJsonText.slice(0, -1)},"gateway":${JSON.stringify(gateway)}}`;
}

/** The CORS headers fastify's cors plugin set on the reply, carried onto a hijacked response. */
function corsHeaders(reply: FastifyReply): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (name.startsWith('access-control-') || name === 'vary' || name.startsWith('x-ratelimit-') || name === BUDGET_REMAINING_HEADER)
      headers[name] = String(value);
  }
  return headers;
}
