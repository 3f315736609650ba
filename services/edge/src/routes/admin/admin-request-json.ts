/**
 * A request as the admin API shows it: from the request log's record (a search, a request's
 * detail, an export) or from metering's latest requests (without a request log), each field by the
 * same name whichever it comes from; and the bodies the log kept for it (or for a tool call).
 */
import { picoUsdToUsd } from '@gateway/catalog';
import type { GuardrailDecisionOutput, RecentRequestOutput, RequestBodiesOutput, RequestRecordOutput } from '@gateway/proto';
import type { GatewayRequest, LoggedBodies, LoggedRequest } from './admin-api-schemas.js';

/** A request's (or a tool call's) bodies as the detail shows them. */
export function bodiesJson(bodies: RequestBodiesOutput): LoggedBodies {
  const requestCut = Number(bodies.request_truncated_bytes ?? 0);
  const responseCut = Number(bodies.response_truncated_bytes ?? 0);
  return {
    request: bodies.request ?? '',
    response: bodies.response ?? '',
    request_truncated: requestCut > 0,
    response_truncated: responseCut > 0,
    request_truncated_bytes: requestCut,
    response_truncated_bytes: responseCut,
  };
}

/** The fields metering's latest requests and the request log's records both carry, by the same names. */
type RequestFields = Pick<
  RequestRecordOutput & RecentRequestOutput,
  | 'event_id'
  | 'request_id'
  | 'key_id'
  | 'received_at_ms'
  | 'requested_model'
  | 'model_id'
  | 'provider'
  | 'stream'
  | 'error_code'
  | 'latency_ms'
  | 'prompt_tokens'
  | 'completion_tokens'
  | 'fallback_attempts'
>;

/** A cache status as the admin API shows it; null for none (or one it does not know). */
function cacheStatusOf(status: string | undefined): GatewayRequest['cache_status'] {
  return status === 'hit' || status === 'miss' || status === 'skip' ? status : null;
}

/** What every request the admin API shows says, from the fields both sources carry. */
function requestJson(entry: RequestFields) {
  return {
    object: 'gateway.request' as const,
    id: entry.event_id ?? '',
    request_id: entry.request_id ?? '',
    key_id: entry.key_id ?? '',
    created_at: Number(entry.received_at_ms ?? 0),
    requested_model: entry.requested_model ?? '',
    model: entry.model_id ?? '',
    provider: entry.provider ?? '',
    stream: entry.stream === true,
    error_code: entry.error_code || null,
    latency_ms: Number(entry.latency_ms ?? 0),
    prompt_tokens: Number(entry.prompt_tokens ?? 0),
    completion_tokens: Number(entry.completion_tokens ?? 0),
    fallbacks: Number(entry.fallback_attempts ?? 0),
  };
}

/** A metered request as the admin API shows it. */
export function recentJson(entry: RecentRequestOutput): GatewayRequest {
  return {
    ...requestJson(entry),
    operation: entry.operation || 'chat',
    outcome: (entry.outcome ?? 'OUTCOME_UNSPECIFIED').replace('OUTCOME_', '').toLowerCase() as GatewayRequest['outcome'],
    cost_usd: picoUsdToUsd(BigInt(entry.cost_pico_usd || '0')),
    auto: entry.auto ? { score: entry.auto.score ?? 0, tier: entry.auto.tier ?? '', policy: entry.auto.policy ?? '' } : null,
    cache_status: cacheStatusOf(entry.cache_status),
    cache_age_ms: entry.cache_status === 'hit' ? Number(entry.cache_age_ms ?? 0) : null,
    saved_cost_usd: picoUsdToUsd(BigInt(entry.saved_cost_pico_usd || '0')),
  };
}

/** A logged request as the admin API shows it. */
export function loggedJson(record: RequestRecordOutput): LoggedRequest {
  const cost = BigInt(record.cost_pico_usd || '0');
  const saved = BigInt(record.saved_cost_pico_usd || '0');
  return {
    ...requestJson(record),
    operation: record.api === 'embeddings' ? 'embeddings' : 'chat',
    api: record.api ?? '',
    response_id: record.response_id || null,
    trace_id: record.trace_id || null,
    team_id: record.team_id || null,
    deployment_id: record.deployment_id || null,
    outcome: (record.outcome || 'unspecified') as GatewayRequest['outcome'],
    http_status: record.http_status || null,
    time_to_first_token_ms: record.time_to_first_token_ms ?? null,
    cached_tokens: Number(record.cached_tokens ?? 0),
    cache_write_tokens: Number(record.cache_write_tokens ?? 0),
    reasoning_tokens: Number(record.reasoning_tokens ?? 0),
    cost_usd: picoUsdToUsd(cost),
    cost_pico_usd: cost.toString(),
    fallback_models: record.fallback_models ?? [],
    user_agent: record.user_agent || null,
    guardrails: (record.guardrails ?? []).map(guardrailJson),
    auto: null,
    cache_status: cacheStatusOf(record.cache_status),
    cache_age_ms: null,
    saved_cost_usd: picoUsdToUsd(saved),
    saved_cost_pico_usd: saved.toString(),
    batch_id: record.batch_id || null,
  };
}

/** A guardrail decision the log kept, as the admin API shows it: which policy's check, where, what it did, whether enforced. */
export function guardrailJson(decision: GuardrailDecisionOutput) {
  return {
    policy: decision.policy ?? '',
    check: decision.check ?? '',
    point: decision.point ?? '',
    action: decision.action ?? '',
    enforced: decision.enforced === true,
    entity: decision.entity ?? '',
    ...(decision.error ? { error: decision.error } : {}),
  };
}
