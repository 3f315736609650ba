/**
 * The RequestLogService the edge searches: the requests and the MCP tool calls, each searched and
 * read by id with its bodies when asked for and kept. PostgreSQL failing is UNAVAILABLE
 * (`store_unavailable`); the service's own refusals (an invalid cursor, an unknown id) pass as
 * they are; every read is timed by its result.
 */
import { GatewayError, unary } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { prometheus } from '@gateway/observability';
import type {
  GetRequestRequestOutput,
  GetRequestResponse,
  GetToolCallRequestOutput,
  GetToolCallResponse,
  RequestLogServiceHandlers,
  SearchRequestsRequestOutput,
  SearchRequestsResponse,
  SearchToolCallsRequestOutput,
  SearchToolCallsResponse,
} from '@gateway/proto';
import type pg from 'pg';
import { getBodies } from './request-bodies.js';
import { getRequest, searchRequests } from './request-search.js';
import { getToolCall, searchToolCalls } from './tool-call-search.js';

/** What a read of the log for a search came to, each exported from 0. */
export const QUERY_RESULTS = ['ok', 'refused', 'error'];

/** What the handlers read from. */
export interface RequestLogReads {
  pool: pg.Pool;
  logger: Logger;
  /** The clock, in Unix ms (the default time ranges). */
  now: () => number;
  /** Days kept: a search reaches no further back. */
  retentionDays: number;
  /** Each read's duration, by result (QUERY_RESULTS). */
  queries: prometheus.Histogram<'result'>;
}

/** The service's handlers, checked against the generated service type. */
export function requestLogHandlers(reads: RequestLogReads): RequestLogServiceHandlers {
  const { pool, logger, now, retentionDays } = reads;
  const report = (error: unknown, method: string) => logger.error({ err: error, method }, 'request log search failed');
  const database = async <T>(work: () => Promise<T>): Promise<T> => {
    const done = reads.queries.startTimer();
    try {
      const found = await work();
      done({ result: 'ok' });
      return found;
    } catch (error) {
      done({ result: error instanceof GatewayError ? 'refused' : 'error' });
      if (error instanceof GatewayError) throw error;
      report(error, 'query');
      throw GatewayError.of('store_unavailable', 'The request log could not be read.', { cause: error });
    }
  };
  /** A record by the id a Get names (NOT_FOUND when none), with its bodies when asked for and kept. */
  const withBodies = async <Found extends { event_id?: string; received_at_ms?: unknown }>(
    request: { id?: string; include_bodies?: boolean },
    what: string,
    get: (id: string) => Promise<Found | undefined>,
  ) => {
    const id = request.id ?? '';
    if (!id || id.length > 200) throw GatewayError.of('invalid_request', "'id' must be an event id or a request id.", { param: 'id' });
    const found = await database(() => get(id));
    if (!found) throw GatewayError.of('not_found', `The request log has no ${what} ${id}.`, { param: 'id' });
    const bodies = request.include_bodies ? await database(() => getBodies(pool, found.event_id ?? '', Number(found.received_at_ms ?? 0))) : undefined;
    return { found, bodies };
  };
  return {
    SearchRequests: unary<SearchRequestsRequestOutput, SearchRequestsResponse>(
      (request) => database(() => searchRequests(pool, request, { nowMs: now(), retentionDays })),
      'SearchRequests',
      report,
    ),
    GetRequest: unary<GetRequestRequestOutput, GetRequestResponse>(
      async (request) => {
        const { found, bodies } = await withBodies(request, 'request', (id) => getRequest(pool, id));
        return { request: found, ...(bodies && { bodies }) };
      },
      'GetRequest',
      report,
    ),
    SearchToolCalls: unary<SearchToolCallsRequestOutput, SearchToolCallsResponse>(
      (request) => database(() => searchToolCalls(pool, request, { nowMs: now(), retentionDays })),
      'SearchToolCalls',
      report,
    ),
    GetToolCall: unary<GetToolCallRequestOutput, GetToolCallResponse>(
      async (request) => {
        // A call's arguments and result are kept as its bodies, under its event id.
        const { found, bodies } = await withBodies(request, 'tool call', (id) => getToolCall(pool, id));
        return { tool_call: found, ...(bodies && { bodies }) };
      },
      'GetToolCall',
      report,
    ),
  };
}
