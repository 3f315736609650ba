/**
 * GET /admin/v1/requests and GET /admin/v1/requests/{id}: the request log, searched through the
 * request-log service (REQUEST_LOG_SERVICE_ADDR), in the admin scope (an admin or a viewer).
 *
 * Without a request log configured, GET /admin/v1/requests answers the latest requests metering
 * keeps (limit and key_id), as it always did, and a search with any of the log's parameters, or
 * a request's detail, is a 503 `request_log_not_configured` that says so.
 *
 * `format=csv` or `format=jsonl` exports every request the search finds (up to EXPORT_MAX_ROWS),
 * page after page, as a download; `json` (the default) answers one page and its `next_cursor`.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { picoUsdToUsd } from '@gateway/catalog';
import { callUnary } from '@gateway/grpc';
import type {
  GetRequestRequest,
  GetRequestResponseOutput,
  RequestBodiesOutput,
  ListRecentRequestsRequest,
  ListRecentRequestsResponseOutput,
  RecentRequestOutput,
  RequestRecordOutput,
  SearchRequestsRequest,
  SearchRequestsResponseOutput,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { edgeError } from '../../error-codes.js';
import {
  type GatewayRequest,
  type List,
  type LoggedBodies,
  type LoggedRequest,
  type LoggedRequestDetail,
  REQUEST_LOG_PARAMETERS,
  type RequestLogQuery,
  RequestLogQuerySchema,
} from './admin-api-schemas.js';
import type { AdminPrincipal } from './admin-principal.js';
import { type AdminCallOptions, registerAdminScope } from './admin-scope.js';

/**
 * Whether an admin principal may read request bodies: an admin always; a viewer only when
 * REQUEST_LOG_BODIES_VIEWERS names its subject (an admin token's id, an SSO user's subject) or is `*`.
 */
export function mayReadBodies(principal: AdminPrincipal | undefined, viewers: string): boolean {
  if (!principal) return false;
  if (principal.role === 'admin') return true;
  const allowed = viewers
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  return allowed.includes('*') || allowed.includes(principal.subject);
}

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

/** The most requests one export holds. */
export const EXPORT_MAX_ROWS = 100_000;
/** Requests per call to the request log while exporting. */
const EXPORT_PAGE_SIZE = 1_000;

/** The 503 of a route that needs the request log where none is configured; `what` it would have searched. */
export function notConfigured(what = 'requests'): Error {
  return edgeError(
    'request_log_not_configured',
    `The request log is not configured: set REQUEST_LOG_SERVICE_ADDR to the request-log service (which needs a DATABASE_URL) to search ${what}.`,
  );
}

const SORTS = { time: 'SORT_FIELD_TIME', latency: 'SORT_FIELD_LATENCY', cost: 'SORT_FIELD_COST' } as const;

/** USD with up to 12 decimals as pico-USD, exactly. */
function usdToPico(usd: string): number {
  const [whole = '0', fraction = ''] = usd.split('.');
  return Number(BigInt(whole) * 1_000_000_000_000n + BigInt(fraction.padEnd(12, '0')));
}

/** A search's time range (`start`, `end` in Unix seconds) in milliseconds, 0 where open; INVALID_VALUE when it ends before it starts. */
export function timeRangeOf(query: { start?: string | number; end?: string | number }): { start_ms: number; end_ms: number } {
  const start = query.start === undefined ? 0 : Number(query.start) * 1000;
  const end = query.end === undefined ? 0 : Number(query.end) * 1000;
  if (end && end <= start) throw edgeError('invalid_value', "'end' must be after 'start'.", { param: 'end' });
  return { start_ms: start, end_ms: end };
}

/** A validated query as the request log's search. */
function searchOf(query: RequestLogQuery): SearchRequestsRequest {
  const range = timeRangeOf(query);
  const bounds = (low: string | undefined, high: string | undefined, name: string) => {
    if (low !== undefined && high !== undefined && Number(high) < Number(low))
      throw edgeError('invalid_value', `'max_${name}' must not be below 'min_${name}'.`, { param: `max_${name}` });
  };
  bounds(query.min_latency_ms, query.max_latency_ms, 'latency_ms');
  bounds(query.min_cost_usd, query.max_cost_usd, 'cost_usd');
  return {
    ...range,
    key_id: query.key_id ?? '',
    team_id: query.team_id ?? '',
    model: query.model ?? '',
    provider: query.provider ?? '',
    deployment_id: query.deployment ?? '',
    http_status: query.status === undefined ? 0 : Number(query.status),
    error_code: query.error_code ?? '',
    api: query.api ?? '',
    outcome: query.outcome ?? '',
    ...(query.min_latency_ms !== undefined && { min_latency_ms: Number(query.min_latency_ms) }),
    ...(query.max_latency_ms !== undefined && { max_latency_ms: Number(query.max_latency_ms) }),
    ...(query.min_cost_usd !== undefined && { min_cost_pico_usd: usdToPico(query.min_cost_usd) }),
    ...(query.max_cost_usd !== undefined && { max_cost_pico_usd: usdToPico(query.max_cost_usd) }),
    sort: SORTS[(query.sort ?? 'time') as keyof typeof SORTS],
    ascending: query.order === 'asc',
    page_size: Number(query.limit ?? 50),
    cursor: query.cursor ?? '',
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
function recentJson(entry: RecentRequestOutput): GatewayRequest {
  return {
    ...requestJson(entry),
    operation: entry.operation || 'chat',
    outcome: (entry.outcome ?? 'OUTCOME_UNSPECIFIED').replace('OUTCOME_', '').toLowerCase() as GatewayRequest['outcome'],
    cost_usd: picoUsdToUsd(BigInt(entry.cost_pico_usd || '0')),
    auto: entry.auto ? { score: entry.auto.score ?? 0, tier: entry.auto.tier ?? '', policy: entry.auto.policy ?? '' } : null,
  };
}

/** A logged request as the admin API shows it. */
export function loggedJson(record: RequestRecordOutput): LoggedRequest {
  const cost = BigInt(record.cost_pico_usd || '0');
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
    guardrails: (record.guardrails ?? []).map((decision) => ({
      policy: decision.policy ?? '',
      check: decision.check ?? '',
      point: decision.point ?? '',
      action: decision.action ?? '',
      enforced: decision.enforced === true,
      entity: decision.entity ?? '',
      ...(decision.error ? { error: decision.error } : {}),
    })),
    auto: null,
  };
}

/** The columns of a CSV export, in order. */
export const CSV_COLUMNS = [
  'id',
  'created_at',
  'request_id',
  'response_id',
  'trace_id',
  'key_id',
  'team_id',
  'api',
  'requested_model',
  'model',
  'provider',
  'deployment_id',
  'fallback_models',
  'outcome',
  'http_status',
  'error_code',
  'stream',
  'latency_ms',
  'time_to_first_token_ms',
  'prompt_tokens',
  'completion_tokens',
  'cached_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
  'cost_usd',
  'cost_pico_usd',
  'user_agent',
] as const satisfies readonly (keyof LoggedRequest)[];

/** One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break; a leading =, +, - or @ is quoted text, never a spreadsheet formula. */
function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = Array.isArray(value) ? value.join(' ') : String(value);
  if (/^[=+\-@\t\r]/.test(text) && typeof value === 'string') text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The lines of an export: every page of the search, up to EXPORT_MAX_ROWS. */
async function* exportLines(
  deps: EdgeDependencies,
  request: FastifyRequest,
  options: AdminCallOptions,
  search: SearchRequestsRequest,
  format: 'csv' | 'jsonl',
): AsyncGenerator<string> {
  const log = deps.requestLog!;
  if (format === 'csv') yield `${CSV_COLUMNS.join(',')}\r\n`;
  let cursor = search.cursor ?? '';
  let rows = 0;
  do {
    const page = await callUnary<SearchRequestsRequest, SearchRequestsResponseOutput>(
      log,
      log.SearchRequests,
      { ...search, page_size: Math.min(EXPORT_PAGE_SIZE, EXPORT_MAX_ROWS - rows), cursor },
      options(request),
    );
    const lines = page.requests.map((record) => {
      const json = loggedJson(record);
      return format === 'csv' ? `${CSV_COLUMNS.map((column) => csvField(json[column])).join(',')}\r\n` : `${JSON.stringify(json)}\n`;
    });
    rows += lines.length;
    if (lines.length > 0) yield lines.join('');
    cursor = page.next_cursor ?? '';
  } while (cursor && rows < EXPORT_MAX_ROWS);
}

/** Sends an export as a download. */
function sendExport(reply: FastifyReply, lines: AsyncGenerator<string>, format: 'csv' | 'jsonl'): FastifyReply {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return reply
    .header('content-type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8')
    .header('content-disposition', `attachment; filename="requests-${stamp}.${format}"`)
    .send(Readable.from(lines));
}

/** Registers the request log's routes in the admin scope. */
export function registerAdminRequestLog(app: FastifyInstance, deps: EdgeDependencies): void {
  registerAdminScope(app, deps, (admin, options) => {
    admin.get<{ Querystring: RequestLogQuery }>(
      '/admin/v1/requests',
      { schema: { querystring: RequestLogQuerySchema } },
      async (request, reply): Promise<unknown> => {
        const query = request.query;
        const log = deps.requestLog;
        if (!log) {
          // The latest requests metering keeps: all there is without the log.
          if (REQUEST_LOG_PARAMETERS.some((name) => query[name] !== undefined)) throw notConfigured();
          const limit = Number(query.limit ?? 50);
          if (limit > 200)
            throw edgeError('invalid_value', "'limit' must be an integer from 1 to 200 (the request log is not configured).", { param: 'limit' });
          const listed = await callUnary<ListRecentRequestsRequest, ListRecentRequestsResponseOutput>(
            deps.metering,
            deps.metering.ListRecentRequests,
            { limit, key_id: query.key_id ?? '' },
            options(request),
          );
          return { object: 'list', data: listed.requests.map(recentJson) } satisfies List<GatewayRequest>;
        }
        const search = searchOf(query);
        const format = (query.format ?? 'json') as 'json' | 'csv' | 'jsonl';
        if (format !== 'json') return sendExport(reply, exportLines(deps, request, options, search, format), format);
        const page = await callUnary<SearchRequestsRequest, SearchRequestsResponseOutput>(log, log.SearchRequests, search, options(request));
        return { object: 'list', data: page.requests.map(loggedJson), has_more: Boolean(page.next_cursor), next_cursor: page.next_cursor || null };
      },
    );

    admin.get<{ Params: { id: string } }>('/admin/v1/requests/:id', async (request): Promise<LoggedRequestDetail> => {
      const log = deps.requestLog;
      if (!log) throw notConfigured();
      const { id } = request.params;
      if (!/^[A-Za-z0-9._:-]{1,200}$/.test(id)) throw edgeError('invalid_value', "The id must be a request's id or its request id.", { param: 'id' });
      // The bodies are read only for a caller allowed to see them: they never leave the log otherwise.
      const includeBodies = mayReadBodies(request.adminPrincipal, deps.config.REQUEST_LOG_BODIES_VIEWERS);
      const found = await callUnary<GetRequestRequest, GetRequestResponseOutput>(log, log.GetRequest, { id, include_bodies: includeBodies }, options(request));
      return { ...loggedJson(found.request!), bodies: found.bodies ? bodiesJson(found.bodies) : null };
    });
  });
}
