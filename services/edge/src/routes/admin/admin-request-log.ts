/**
 * GET /admin/v1/requests and GET /admin/v1/requests/{id}: the request log, searched through the
 * request-log service (REQUEST_LOG_SERVICE_ADDR), in the admin scope (an admin or a viewer).
 *
 * Without a request log configured, GET /admin/v1/requests answers the latest requests metering
 * keeps (limit and key_id), as it always did, and a search with any of the log's parameters, or
 * a request's detail, is a 503 `request_log_not_configured` that says so.
 *
 * `format=csv` or `format=jsonl` exports every request the search finds (up to EXPORT_MAX_ROWS),
 * page after page, as a download (admin-request-export.ts); `json` (the default) answers one page
 * and its `next_cursor`. A request's JSON is admin-request-json.ts's.
 */
import type { FastifyInstance } from 'fastify';
import { callUnary } from '@gateway/grpc';
import type {
  GetRequestRequest,
  GetRequestResponseOutput,
  ListRecentRequestsRequest,
  ListRecentRequestsResponseOutput,
  SearchRequestsRequest,
  SearchRequestsResponseOutput,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { edgeError } from '../../error-codes.js';
import {
  type GatewayRequest,
  type List,
  type LoggedRequestDetail,
  REQUEST_LOG_PARAMETERS,
  type RequestLogQuery,
  RequestLogQuerySchema,
} from './admin-api-schemas.js';
import type { AdminPrincipal } from './admin-principal.js';
import { sendRequestExport } from './admin-request-export.js';
import { bodiesJson, loggedJson, recentJson } from './admin-request-json.js';
import { registerAdminScope } from './admin-scope.js';

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
    cache_status: query.cache_status ?? '',
    batch_id: query.batch_id ?? '',
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
        if (format !== 'json') return sendRequestExport(reply, { deps, request, options, search, format });
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
