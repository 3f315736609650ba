/**
 * A usage event as the request log's row: its ids, its API, models, outcome, tokens, cost (priced
 * as metering prices it, by @gateway/catalog's pricingOf and costPicoUsd; a response-cache hit at
 * its hit cost), timings and what the response cache did.
 */
import { type Catalog, costPicoUsd, pricingOf } from '@gateway/catalog';
import { PoisonMessageError } from '@gateway/messaging';
import type { UsageEventOutput } from '@gateway/proto';

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
 * The cost of an event in pico-USD, as metering bills it: for a response-cache hit its hit cost
 * (CacheUse.cost_pico_usd, never the price of the stored answer's tokens); otherwise the catalog's
 * price of the model at the provider that answered, or for a model the catalog does not know
 * (removed since) what the edge reported in the response.
 */
export function costOf(event: UsageEventOutput, catalog: Catalog): bigint {
  if (event.cache?.status === 'hit') return BigInt(Math.max(0, Math.trunc(event.cache.cost_pico_usd ?? 0)));
  const model = catalog.byId.get(event.model_id ?? '');
  if (!model) return BigInt(Math.trunc(event.reported_cost_pico_usd ?? 0));
  return costPicoUsd(pricingOf(model, event.provider ?? ''), event.usage ?? {});
}

/** One guardrail decision as the log keeps it. */
export interface RequestGuardrail {
  policy: string;
  check: string;
  point: string;
  action: string;
  enforced: boolean;
  entity: string;
  error: string;
}

function guardrailOf(decision: NonNullable<UsageEventOutput['guardrails']>[number]): RequestGuardrail {
  return {
    policy: decision.policy ?? '',
    check: decision.check ?? '',
    point: decision.point ?? '',
    action: decision.action ?? '',
    enforced: decision.enforced === true,
    entity: decision.entity ?? '',
    error: decision.error ?? '',
  };
}

/** What the response cache can have done for a request (CacheUse.status). */
const CACHE_STATUSES = new Set(['hit', 'miss', 'skip']);

/** The cache status of an event; null when the cache was off for it (or it names a status the log does not know). */
function cacheStatusOf(event: UsageEventOutput): string | null {
  const status = event.cache?.status ?? '';
  return CACHE_STATUSES.has(status) ? status : null;
}

/** How an event gives a column of its row. */
type Column = (event: UsageEventOutput, catalog: Catalog) => unknown;

/** The columns of request_log and what each holds of an event, in the order an INSERT lists them. */
const COLUMNS = {
  received_at: (event) => new Date(Number(event.received_at_ms ?? 0)),
  event_id: (event) => event.event_id ?? '',
  request_id: (event) => event.request_id ?? '',
  response_id: (event) => event.response_id ?? '',
  trace_id: (event) => traceIdOf(event.traceparent),
  key_id: (event) => event.key_id ?? '',
  team_id: (event) => event.team_id ?? '',
  api: apiOf,
  requested_model: (event) => event.requested_model ?? '',
  model_id: (event) => event.model_id ?? '',
  provider: (event) => event.provider ?? '',
  /** The deployment that answered; '' when none did. */
  deployment_id: (event) => event.deployment_id ?? '',
  fallback_models: (event) => event.fallback_models ?? [],
  fallback_attempts: (event) => event.fallback_attempts ?? 0,
  outcome: (event) => (event.outcome ?? 'OUTCOME_UNSPECIFIED').replace('OUTCOME_', '').toLowerCase(),
  http_status: (event) => event.http_status ?? 0,
  error_code: (event) => event.error_code ?? '',
  prompt_tokens: (event) => event.usage?.prompt_tokens ?? 0,
  completion_tokens: (event) => event.usage?.completion_tokens ?? 0,
  cached_tokens: (event) => event.usage?.cached_tokens ?? 0,
  cache_write_tokens: (event) => event.usage?.cache_write_tokens ?? 0,
  reasoning_tokens: (event) => event.usage?.reasoning_tokens ?? 0,
  cost_pico_usd: (event, catalog) => costOf(event, catalog).toString(),
  latency_ms: (event) => event.latency_ms ?? 0,
  time_to_first_token_ms: (event) => event.time_to_first_token_ms ?? null,
  stream: (event) => event.stream === true,
  user_agent: (event) => event.user_agent ?? '',
  /** The guardrail decisions, as JSON text for the jsonb column (read back as the array). */
  guardrails: (event): string | RequestGuardrail[] => JSON.stringify((event.guardrails ?? []).map(guardrailOf)),
  cache_status: cacheStatusOf,
  /** What a hit saved, pico-USD as a decimal integer; '0' for anything but a hit. */
  saved_cost_pico_usd: (event) => (event.cache?.status === 'hit' ? String(Math.max(0, Math.trunc(event.cache.saved_cost_pico_usd ?? 0))) : '0'),
  batch_id: (event) => event.batch_id ?? '',
} satisfies Record<string, Column>;

/** One row of request_log: the columns an INSERT writes (REQUEST_COLUMNS). */
export type RequestRow = { [Name in keyof typeof COLUMNS]: ReturnType<(typeof COLUMNS)[Name]> };

/** The columns of a row, in the order an INSERT lists them. */
export const REQUEST_COLUMNS = Object.keys(COLUMNS) as readonly (keyof RequestRow)[];

/** The row of an event; throws PoisonMessageError for one the log can never hold (no event id, key or time). */
export function requestRow(event: UsageEventOutput, catalog: Catalog): RequestRow {
  if (!event.event_id) throw new PoisonMessageError('missing_event_id', 'usage event without event_id');
  if (!event.key_id) throw new PoisonMessageError('missing_key_id', `usage event ${event.event_id} without key_id`);
  const receivedAtMs = Number(event.received_at_ms ?? 0);
  if (!(receivedAtMs > 0)) throw new PoisonMessageError('missing_received_at', `usage event ${event.event_id} without received_at_ms`);
  return Object.fromEntries(REQUEST_COLUMNS.map((column) => [column, COLUMNS[column](event, catalog)])) as RequestRow;
}
