/**
 * POST /v1/chat/completions: validate, ask auth and (for `auto`) the router at the same time, run
 * the request on an executor, answer whole or as SSE (completions/sse-relay.ts), and report its
 * usage (completions/usage-report.ts).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { costPicoUsd } from '@gateway/catalog';
import { GatewayError } from '@gateway/grpc';
import { NO_TRACING, SpanKind, SpanStatusCode } from '@gateway/observability';
import { chatCompletionJson } from '@gateway/openai-wire';
import type { CheckKeyResponseOutput, ExecuteRequest, ExecutionAttemptOutput, ModelOutput, UsageEvent, UsageOutput } from '@gateway/proto';
import { bearerKey, checkKey, noteKeyChecked, reservedTokens } from '../auth/key-check.js';
import { holdReservation, releaseReservation } from '../auth/reservations.js';
import { withReplicaRetry } from '../completions/executor-replicas.js';
import { fallbackChain } from '../completions/fallback-chain.js';
import { answeredModel, countBoundedPromptTokens, createModelResolver, promptTokensOf, routePolicy } from '../completions/model-resolution.js';
import { relayStream } from '../completions/sse-relay.js';
import { createUsageReporter, gatewayInfo, NO_USAGE, type Observed } from '../completions/usage-report.js';
import type { EdgeDependencies } from '../dependencies.js';
import { RequestError, toRequestError } from '../errors.js';
import { GenAiMetrics, planName } from '../genai-metrics.js';
import { rateLimitHeaders } from '../rate-limit-headers.js';
import { parseChatRequest } from '../wire/parse-chat-request.js';
import { tierName } from './models.js';

/** Registers the route. */
export function registerChatCompletions(app: FastifyInstance, deps: EdgeDependencies): void {
  const { config, catalog } = deps;
  const metrics = new GenAiMetrics(deps.registry, { keyId: config.EDGE_METRICS_KEY_ID });
  const tracing = deps.tracing ?? NO_TRACING;
  const resolve = createModelResolver(deps);
  const publishUsage = createUsageReporter(deps, metrics);

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
        checkKey(deps, apiKey, requestId, { reserveTokens: reserve(promptTokens), signal: abort.signal, traceparent }).catch(async (error: unknown) => {
          // Too large for the key's tokens per minute on an estimate: the exact count decides.
          if (!(error instanceof RequestError && error.code === 'request_too_large') || prompt.exact) throw error;
          return checkKey(deps, apiKey, requestId, {
            reserveTokens: reserve(await countBoundedPromptTokens(catalog, parsed)),
            signal: abort.signal,
            traceparent,
          });
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

      const fallbacks = fallbackChain(catalog, parsed, routing, promptTokens, decision.catalog_fallbacks === true);
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
      /** Reports how the request ended (usage event, metrics, span), priced; returns its `gateway` object. */
      const report = (
        answered: ModelOutput,
        usage: UsageOutput | undefined,
        provider: string,
        outcome: UsageEvent['outcome'],
        attempts: readonly ExecutionAttemptOutput[],
        ended: Partial<Observed> = {},
      ) => {
        const costPico = costPicoUsd((answered.pricing ?? {}) as never, usage ?? {});
        const latencyMs = reply.elapsedTime;
        const reservationId = reservation.handOff();
        const observedNow = { ...observed, ...ended };
        publishUsage({
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
          reservationId,
          observed: observedNow,
          attempts,
        });
        return gatewayInfo(routing, answered, attempts, latencyMs, costPico);
      };

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
          report(routing.model, NO_USAGE, '', cancelled ? 'OUTCOME_CANCELLED' : 'OUTCOME_FAILED', [], { errorCode });
          throw error;
        });
        const response = result.response!;
        const answered = answeredModel(catalog, routing, result.model_id);
        const gateway = report(answered, response.usage, result.provider ?? '', 'OUTCOME_COMPLETED', result.attempts);
        const body = JSON.stringify(chatCompletionJson(response, gateway, parsed.legacyFunctions));
        void reply
          .header('content-type', 'application/json')
          .header('openai-processing-ms', String(Math.round(gateway.latency_ms)))
          .header('openai-model', answered.id ?? '');
        return body;
      }

      await relayStream(
        deps,
        request,
        reply,
        execute,
        routing,
        parsed,
        abort,
        traceparent,
        (answered, attempts, usage, provider, outcome, firstTokenMs, errorCode) =>
          report(answered, usage, provider, outcome, attempts, { ...(firstTokenMs !== undefined ? { firstTokenMs } : {}), errorCode }),
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
}
