/**
 * A usage event as the request log's row: its ids, its API, models, outcome, tokens, cost (priced
 * as metering prices it, by @gateway/catalog's pricingOf and costPicoUsd) and timings.
 */
import { type Catalog, costPicoUsd, pricingOf } from '@gateway/catalog';
import { PoisonMessageError } from '@gateway/messaging';
import type { UsageEventOutput } from '@gateway/proto';

/** One row of request_log: the columns an INSERT writes (REQUEST_COLUMNS). */
export interface RequestRow {
  received_at: Date;
  event_id: string;
  request_id: string;
  response_id: string;
  trace_id: string;
  key_id: string;
  team_id: string;
  api: string;
  requested_model: string;
  model_id: string;
  provider: string;
  /** The deployment that answered; '' when none did. */
  deployment_id: string;
  fallback_models: string[];
  fallback_attempts: number;
  outcome: string;
  http_status: number;
  error_code: string;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
  cost_pico_usd: string;
  latency_ms: number;
  time_to_first_token_ms: number | null;
  stream: boolean;
  user_agent: string;
}

/** The columns of a row, in the order an INSERT lists them. */
export const REQUEST_COLUMNS = [
  'received_at',
  'event_id',
  'request_id',
  'response_id',
  'trace_id',
  'key_id',
  'team_id',
  'api',
  'requested_model',
  'model_id',
  'provider',
  'deployment_id',
  'fallback_models',
  'fallback_attempts',
  'outcome',
  'http_status',
  'error_code',
  'prompt_tokens',
  'completion_tokens',
  'cached_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
  'cost_pico_usd',
  'latency_ms',
  'time_to_first_token_ms',
  'stream',
  'user_agent',
] as const satisfies readonly (keyof RequestRow)[];

/** The trace id of a W3C traceparent (`00-<trace id>-<span id>-<flags>`); empty when there is none. */
export function traceIdOf(traceparent: string | undefined): string {
  const match = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent ?? '');
  return match ? match[1]! : '';
}

/** The API of an event from an edge before UsageEvent.api: embeddings, or one of the chat APIs. */
function apiOf(event: UsageEventOutput): string {
  if (event.api) return event.api;
  return event.operation === 'embeddings' ? 'embeddings' : 'chat';
}

/**
 * The cost of an event in pico-USD: the catalog's price of the model at the provider that
 * answered, as metering bills it; for a model the catalog does not know (removed since), what the
 * edge reported in the response.
 */
export function costOf(event: UsageEventOutput, catalog: Catalog): bigint {
  const model = catalog.byId.get(event.model_id ?? '');
  if (!model) return BigInt(Math.trunc(event.reported_cost_pico_usd ?? 0));
  return costPicoUsd(pricingOf(model, event.provider ?? ''), event.usage ?? {});
}

/** The row of an event; throws PoisonMessageError for one the log can never hold (no event id, key or time). */
export function requestRow(event: UsageEventOutput, catalog: Catalog): RequestRow {
  if (!event.event_id) throw new PoisonMessageError('missing_event_id', 'usage event without event_id');
  if (!event.key_id) throw new PoisonMessageError('missing_key_id', `usage event ${event.event_id} without key_id`);
  const receivedAtMs = Number(event.received_at_ms ?? 0);
  if (!(receivedAtMs > 0)) throw new PoisonMessageError('missing_received_at', `usage event ${event.event_id} without received_at_ms`);
  const usage = event.usage ?? {};
  return {
    received_at: new Date(receivedAtMs),
    event_id: event.event_id,
    request_id: event.request_id ?? '',
    response_id: event.response_id ?? '',
    trace_id: traceIdOf(event.traceparent),
    key_id: event.key_id,
    team_id: event.team_id ?? '',
    api: apiOf(event),
    requested_model: event.requested_model ?? '',
    model_id: event.model_id ?? '',
    provider: event.provider ?? '',
    deployment_id: event.deployment_id ?? '',
    fallback_models: event.fallback_models ?? [],
    fallback_attempts: event.fallback_attempts ?? 0,
    outcome: (event.outcome ?? 'OUTCOME_UNSPECIFIED').replace('OUTCOME_', '').toLowerCase(),
    http_status: event.http_status ?? 0,
    error_code: event.error_code ?? '',
    prompt_tokens: usage.prompt_tokens ?? 0,
    completion_tokens: usage.completion_tokens ?? 0,
    cached_tokens: usage.cached_tokens ?? 0,
    cache_write_tokens: usage.cache_write_tokens ?? 0,
    reasoning_tokens: usage.reasoning_tokens ?? 0,
    cost_pico_usd: costOf(event, catalog).toString(),
    latency_ms: event.latency_ms ?? 0,
    time_to_first_token_ms: event.time_to_first_token_ms ?? null,
    stream: event.stream === true,
    user_agent: event.user_agent ?? '',
  };
}
