/**
 * What a finished chat completion reports: its usage event (to metering, over NATS), its GenAI
 * metrics and span attributes, and the `gateway` object of its answer.
 */
import { picoUsdToUsd } from '@gateway/catalog';
import type { GatewayInfo } from '@gateway/openai-wire';
import type { ExecuteRequest, ExecutionAttemptOutput, ModelOutput, UsageEvent, UsageOutput } from '@gateway/proto';
import type { Span } from '@gateway/observability';
import { countPromptTokensAsync, countTextTokensAsync } from '@gateway/tokens';
import type { EdgeDependencies } from '../dependencies.js';
import type { GenAiMetrics } from '../genai-metrics.js';
import { tierName } from '../routes/models.js';
import type { ParsedChatRequest } from '../wire/parse-chat-request.js';
import type { Routing } from './model-resolution.js';

/** What a completion's metrics, span and usage event need when it ends. */
export interface Observed {
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
export const NO_USAGE: UsageOutput = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 };

/** One request's usage event and observations, as publishUsage takes them. */
export interface UsageReport {
  /** Drawn by the edge for each request: metering's de-duplication key. */
  eventId: string;
  requestId: string;
  receivedAtMs: number;
  latencyMs: number;
  keyId: string;
  /** The model that answered (or failed). */
  answered: ModelOutput;
  parsed: ParsedChatRequest;
  usage: UsageOutput | undefined;
  provider: string;
  outcome: UsageEvent['outcome'];
  costPico: bigint;
  /** The reservation metering settles with the event's usage ('' when none). */
  reservationId: string;
  observed: Observed;
  attempts: readonly ExecutionAttemptOutput[];
}

/** Creates the function that reports a finished request; see UsageReport. */
export function createUsageReporter(deps: Pick<EdgeDependencies, 'usage'>, metrics: GenAiMetrics): (report: UsageReport) => void {
  /**
   * Publishes a request's usage event. Its id is drawn by the gateway for each request (eventId),
   * never the caller's x-request-id: metering de-duplicates on it, so an id a caller could repeat
   * or forge would let every request but one go unbilled.
   */
  return function publishUsage({
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
    observed,
    attempts,
  }: UsageReport): void {
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
  };
}

/** The `gateway` object: the model that answered, what it cost, and how it was chosen. */
export function gatewayInfo(
  routing: Routing,
  answered: ModelOutput,
  attempts: readonly ExecutionAttemptOutput[],
  latencyMs: number,
  costPico: bigint,
): GatewayInfo {
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

/** Usage of a stream that did not finish: the real prompt count and the tokens streamed so far. */
export async function estimatedUsage(execute: ExecuteRequest, streamedText: string): Promise<UsageOutput> {
  const prompt = await countPromptTokensAsync(execute.request!);
  const completion = await countTextTokensAsync(streamedText);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, cached_tokens: 0, reasoning_tokens: 0 };
}
