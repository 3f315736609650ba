/** The request log (GET /admin/v1/requests): the queries of the latest requests and of a search, and a request's answer. */
import { type Static, Type } from '@sinclair/typebox';
import { adminObject, KeyIdParameter, Nullable, queryNames, queryParameter, steps, TeamIdParameter, UnixSeconds } from './common.js';

/** The query of GET /admin/v1/requests: from 1 to 200 (leading zeros allowed), 50 when absent. */
export const RecentRequestsQuerySchema = steps(
  queryNames(['limit', 'key_id']),
  Type.Object({
    limit: Type.Optional(queryParameter('limit', '^(?!0+$)(?:[0-9]{1,2}|[01][0-9]{2}|200)$', "'limit' must be an integer from 1 to 200.")),
    key_id: Type.Optional(KeyIdParameter),
  }),
);
export type RecentRequestsQuery = Static<typeof RecentRequestsQuerySchema>;

/** The parameters only the request log answers (the latest requests take limit and key_id alone). */
export const REQUEST_LOG_PARAMETERS = [
  'start',
  'end',
  'team_id',
  'model',
  'provider',
  'deployment',
  'status',
  'error_code',
  'api',
  'outcome',
  'cache_status',
  'batch_id',
  'min_latency_ms',
  'max_latency_ms',
  'min_cost_usd',
  'max_cost_usd',
  'sort',
  'order',
  'cursor',
  'format',
] as const;

const NonNegativeInteger = (name: string) => queryParameter(name, '^[0-9]{1,9}$', `'${name}' must be a non-negative integer.`);
const UsdAmount = (name: string) => queryParameter(name, '^[0-9]{1,9}(\\.[0-9]{1,12})?$', `'${name}' must be an amount in USD (at most 12 decimals).`);
const Word = (name: string, what: string) => queryParameter(name, '^[A-Za-z0-9._:/-]{1,200}$', `'${name}' must be ${what}.`);

/** The query string of GET /admin/v1/requests: a search of the request log (its filters, order, page and export format). */
export const RequestLogQuerySchema = steps(
  queryNames(['limit', 'key_id', ...REQUEST_LOG_PARAMETERS]),
  Type.Object({
    limit: Type.Optional(queryParameter('limit', '^(?!0+$)(?:[0-9]{1,3}|1000)$', "'limit' must be an integer from 1 to 1000.")),
    key_id: Type.Optional(KeyIdParameter),
    start: Type.Optional(UnixSeconds('start')),
    end: Type.Optional(UnixSeconds('end')),
    team_id: Type.Optional(TeamIdParameter),
    model: Type.Optional(Word('model', 'a model id')),
    provider: Type.Optional(Word('provider', 'a provider name')),
    deployment: Type.Optional(
      queryParameter(
        'deployment',
        '^[0-9]{1,4}:[A-Za-z0-9._:/\\[\\]-]{1,200}$',
        "'deployment' must be a deployment id (`<index>:<origin>`, as a request shows it).",
      ),
    ),
    status: Type.Optional(queryParameter('status', '^[1-5][0-9]{2}$', "'status' must be an HTTP status (100 to 599).")),
    error_code: Type.Optional(Word('error_code', 'an error code')),
    api: Type.Optional(
      queryParameter('api', '^(chat_completions|responses|messages|embeddings)$', "'api' must be one of chat_completions, responses, messages, embeddings."),
    ),
    outcome: Type.Optional(
      queryParameter('outcome', '^(completed|failed|cancelled|refused)$', "'outcome' must be one of completed, failed, cancelled, refused."),
    ),
    cache_status: Type.Optional(queryParameter('cache_status', '^(hit|miss|skip)$', "'cache_status' must be one of hit, miss, skip.")),
    batch_id: Type.Optional(queryParameter('batch_id', '^(msg)?batch_[A-Za-z0-9]{1,64}$', "'batch_id' must be a batch id (batch_... or msgbatch_...).")),
    min_latency_ms: Type.Optional(NonNegativeInteger('min_latency_ms')),
    max_latency_ms: Type.Optional(NonNegativeInteger('max_latency_ms')),
    min_cost_usd: Type.Optional(UsdAmount('min_cost_usd')),
    max_cost_usd: Type.Optional(UsdAmount('max_cost_usd')),
    sort: Type.Optional(queryParameter('sort', '^(time|latency|cost)$', "'sort' must be one of time, latency, cost.")),
    order: Type.Optional(queryParameter('order', '^(asc|desc)$', "'order' must be asc or desc.")),
    cursor: Type.Optional(queryParameter('cursor', '^[A-Za-z0-9_-]{1,1000}$', "'cursor' must be the next_cursor of a previous page.")),
    format: Type.Optional(queryParameter('format', '^(json|csv|jsonl)$', "'format' must be one of json, csv, jsonl.")),
  }),
);
export type RequestLogQuery = Static<typeof RequestLogQuerySchema>;

/** A request as the request log shows it: the latest requests' fields and the log's own. */
export type LoggedRequest = GatewayRequest & {
  team_id: string | null;
  api: string;
  response_id: string | null;
  trace_id: string | null;
  http_status: number | null;
  /** The deployment that answered (`<index>:<origin>`, `0:in-process` for a simulated model); null when none did. */
  deployment_id: string | null;
  fallback_models: string[];
  cached_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
  cost_pico_usd: string;
  /** saved_cost_usd exactly: pico-USD as a decimal integer. */
  saved_cost_pico_usd: string;
  /** The batch the request was a line of (`batch_...`); null for an online request. */
  batch_id: string | null;
  time_to_first_token_ms: number | null;
  user_agent: string | null;
  /** The guardrail decisions made for the request, in order; never the text found. */
  guardrails: Array<{ policy: string; check: string; point: string; action: string; enforced: boolean; entity: string; error?: string }>;
};

/**
 * A request's bodies as GET /admin/v1/requests/{id} shows them (never a search or an export):
 * redacted of secrets and capped by the edge that served it; a truncated body ends with a marker
 * saying how many bytes were cut.
 */
export interface LoggedBodies {
  request: string;
  response: string;
  request_truncated: boolean;
  response_truncated: boolean;
  request_truncated_bytes: number;
  response_truncated_bytes: number;
}

/** A request's detail: its fields, and its bodies (null when none are kept, or when the caller may not see them). */
export type LoggedRequestDetail = LoggedRequest & { bodies: LoggedBodies | null };

/** One completion or embeddings request the gateway handled (GET /admin/v1/requests). */
export const GatewayRequestSchema = adminObject('gateway.request', {
  /** The kind of API: `chat` (chat completions, responses, messages) or `embeddings`. */
  operation: Type.String(),
  request_id: Type.String(),
  key_id: Type.String(),
  /** Unix milliseconds. */
  created_at: Type.Integer(),
  requested_model: Type.String(),
  model: Type.String(),
  provider: Type.String(),
  stream: Type.Boolean(),
  /** unspecified from a metering that does not say. */
  /** refused: by the request log only, a request refused before it reached a model (a rate limit, a budget, an allow-list). */
  outcome: Type.Union([Type.Literal('completed'), Type.Literal('cancelled'), Type.Literal('failed'), Type.Literal('refused'), Type.Literal('unspecified')]),
  /** Why a failed request failed (the error envelope's code), where the gateway says. */
  error_code: Nullable(Type.String()),
  latency_ms: Type.Integer(),
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  cost_usd: Type.Number(),
  fallbacks: Type.Integer(),
  /** For `"model": "auto"` only. */
  auto: Nullable(Type.Object({ score: Type.Number(), tier: Type.String(), policy: Type.String() })),
  /**
   * What the response cache did: `hit` (answered from the cache, no model called: the tokens are
   * the stored answer's, cost_usd the hit cost), `miss`, `skip`; null when the cache was off for it.
   */
  cache_status: Nullable(Type.Union([Type.Literal('hit'), Type.Literal('miss'), Type.Literal('skip')])),
  /** A hit: how old the cached answer was (ms); null otherwise, and in the request log, which does not keep it. */
  cache_age_ms: Nullable(Type.Integer()),
  /** A hit: what the cached answer cost when it was made (the cost saved); 0 otherwise. */
  saved_cost_usd: Type.Number(),
});
export type GatewayRequest = Static<typeof GatewayRequestSchema>;
