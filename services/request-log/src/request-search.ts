/**
 * The request log's searches, as SQL: every filter a bound parameter, the order one of three
 * columns with time and event id as tie-breakers, and keyset paging (the cursor is the last row's
 * sort key, so page N costs what page 1 does, and rows written meanwhile never shift a page).
 */
import { GatewayError } from '@gateway/grpc';
import type { RequestRecord, SearchRequestsRequestOutput } from '@gateway/proto';
import type pg from 'pg';
import type { RequestGuardrail, RequestRow } from './request-record.js';

/** Rows per page when the search names none. */
export const DEFAULT_PAGE_SIZE = 50;
/** The most rows one page holds. */
export const MAX_PAGE_SIZE = 1_000;

/** The column each sort orders by. */
const SORT_COLUMNS = {
  SORT_FIELD_UNSPECIFIED: 'received_at',
  SORT_FIELD_TIME: 'received_at',
  SORT_FIELD_LATENCY: 'latency_ms',
  SORT_FIELD_COST: 'cost_pico_usd',
} as const;

type SortName = keyof typeof SORT_COLUMNS;

/** A page's position: the sort it belongs to and the last row's sort key. */
interface Cursor {
  sort: string;
  ascending: boolean;
  /** The sort column's value of the last row (a number, or a bigint as text). */
  value: string;
  receivedAtMs: number;
  eventId: string;
}

function invalid(message: string, param: string): GatewayError {
  return GatewayError.of('invalid_request', message, { param });
}

/** The opaque text of a cursor. */
export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.sort, cursor.ascending ? 1 : 0, cursor.value, cursor.receivedAtMs, cursor.eventId])).toString('base64url');
}

/** A cursor read back; INVALID_ARGUMENT when it is not one, or belongs to another order. */
export function decodeCursor(text: string, sort: string, ascending: boolean): Cursor {
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalid("'cursor' is not a cursor of this search: pass next_cursor as it came.", 'cursor');
  }
  if (
    !Array.isArray(parts) ||
    parts.length !== 5 ||
    typeof parts[2] !== 'string' ||
    !/^-?\d+$/.test(parts[2]) ||
    !Number.isSafeInteger(parts[3]) ||
    typeof parts[4] !== 'string'
  )
    throw invalid("'cursor' is not a cursor of this search: pass next_cursor as it came.", 'cursor');
  if (parts[0] !== sort || parts[1] !== (ascending ? 1 : 0)) throw invalid("'cursor' belongs to a search in another order.", 'cursor');
  return { sort, ascending, value: parts[2], receivedAtMs: parts[3] as number, eventId: parts[4] };
}

/** A row as the database returns it (bigint as text). */
type Row = RequestRow;

/** A row as the RequestLogService answers it. */
export function recordOf({
  received_at,
  cost_pico_usd,
  time_to_first_token_ms,
  guardrails,
  cache_status,
  saved_cost_pico_usd,
  ...columns
}: Row): RequestRecord {
  return {
    ...columns,
    cache_status: cache_status ?? '',
    saved_cost_pico_usd: String(saved_cost_pico_usd),
    // jsonb comes back parsed; text only from a row built in memory.
    guardrails: typeof guardrails === 'string' ? (JSON.parse(guardrails) as RequestGuardrail[]) : guardrails,
    received_at_ms: received_at.getTime(),
    cost_pico_usd: String(cost_pico_usd),
    ...(time_to_first_token_ms === null ? {} : { time_to_first_token_ms }),
  };
}

/** A search as its SQL and parameters (one row more than a page, to tell whether another follows), plus how to read its next cursor. */
export interface PageQuery<R> {
  text: string;
  values: unknown[];
  pageSize: number;
  cursorOf(row: R): string;
}

/** A search of requests. */
export type SearchQuery = PageQuery<Row>;

/** Runs a page query: the page's records and the cursor of the next page (empty at the last). */
export async function queryPage<R extends pg.QueryResultRow, Out>(
  pool: pg.Pool,
  query: PageQuery<R>,
  recordOfRow: (row: R) => Out,
): Promise<{ records: Out[]; next_cursor: string }> {
  const { rows } = await pool.query<R>(query.text, query.values);
  const page = rows.slice(0, query.pageSize);
  const more = rows.length > query.pageSize;
  return { records: page.map(recordOfRow), next_cursor: more ? query.cursorOf(page.at(-1)!) : '' };
}

/** The row of `table` whose event id or request id is `id` (the newest of a repeated request id); undefined when none. */
export async function rowById<R extends pg.QueryResultRow>(pool: pg.Pool, table: 'request_log' | 'tool_calls', id: string): Promise<R | undefined> {
  const { rows } = await pool.query<R>(`SELECT * FROM ${table} WHERE event_id = $1 OR request_id = $1 ORDER BY received_at DESC LIMIT 1`, [id]);
  return rows[0];
}

const PICO = /^\d+$/;

/** Builds a search's query; INVALID_ARGUMENT for a malformed one. */
export function searchQuery(request: SearchRequestsRequestOutput, nowMs: number, retentionDays: number): SearchQuery {
  const sort = (request.sort ?? 'SORT_FIELD_UNSPECIFIED') as SortName;
  const column = SORT_COLUMNS[sort];
  if (!column) throw invalid(`'sort' must be time, latency or cost.`, 'sort');
  const ascending = request.ascending === true;
  const pageSize = request.page_size || DEFAULT_PAGE_SIZE;
  if (pageSize < 1 || pageSize > MAX_PAGE_SIZE) throw invalid(`'limit' must be from 1 to ${MAX_PAGE_SIZE}.`, 'limit');
  const values: unknown[] = [];
  const where: string[] = [];
  const bind = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const startMs = Number(request.start_ms ?? 0) || nowMs - retentionDays * 86_400_000;
  const endMs = Number(request.end_ms ?? 0);
  if (endMs && endMs <= startMs) throw invalid("'end' must be after 'start'.", 'end');
  where.push(`received_at >= ${bind(new Date(startMs))}`);
  if (endMs) where.push(`received_at < ${bind(new Date(endMs))}`);
  const equal = (field: string, value: string | number | undefined) => {
    if (value !== undefined && value !== '' && value !== 0) where.push(`${field} = ${bind(value)}`);
  };
  equal('key_id', request.key_id);
  equal('team_id', request.team_id);
  equal('provider', request.provider);
  equal('deployment_id', request.deployment_id);
  equal('http_status', request.http_status);
  equal('error_code', request.error_code);
  equal('api', request.api);
  equal('outcome', request.outcome);
  equal('cache_status', request.cache_status);
  equal('batch_id', request.batch_id);
  if (request.model) {
    const model = bind(request.model);
    where.push(`(model_id = ${model} OR requested_model = ${model})`);
  }
  if (request.min_latency_ms !== undefined && request.min_latency_ms !== null) where.push(`latency_ms >= ${bind(request.min_latency_ms)}`);
  if (request.max_latency_ms !== undefined && request.max_latency_ms !== null) where.push(`latency_ms <= ${bind(request.max_latency_ms)}`);
  if (request.min_cost_pico_usd !== undefined && request.min_cost_pico_usd !== null) where.push(`cost_pico_usd >= ${bind(String(request.min_cost_pico_usd))}`);
  if (request.max_cost_pico_usd !== undefined && request.max_cost_pico_usd !== null) where.push(`cost_pico_usd <= ${bind(String(request.max_cost_pico_usd))}`);
  const direction = ascending ? 'ASC' : 'DESC';
  const comparison = ascending ? '>' : '<';
  if (request.cursor) {
    const cursor = decodeCursor(request.cursor, sort, ascending);
    if (!PICO.test(cursor.value.replace(/^-/, ''))) throw invalid("'cursor' is not a cursor of this search.", 'cursor');
    const sortValue = column === 'received_at' ? new Date(Number(cursor.value)) : cursor.value;
    where.push(`(${column}, received_at, event_id) ${comparison} (${bind(sortValue)}, ${bind(new Date(cursor.receivedAtMs))}, ${bind(cursor.eventId)})`);
  }
  const order =
    column === 'received_at' ? `received_at ${direction}, event_id ${direction}` : `${column} ${direction}, received_at ${direction}, event_id ${direction}`;
  return {
    // One row more than the page tells whether another page follows.
    text: `SELECT * FROM request_log WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ${pageSize + 1}`,
    values,
    pageSize,
    cursorOf: (row) =>
      encodeCursor({
        sort,
        ascending,
        value: column === 'received_at' ? String(row.received_at.getTime()) : String(row[column]),
        receivedAtMs: row.received_at.getTime(),
        eventId: row.event_id,
      }),
  };
}

/** Runs a search: a page of records and the cursor of the next one (empty at the last). */
export async function searchRequests(
  pool: pg.Pool,
  request: SearchRequestsRequestOutput,
  options: { nowMs: number; retentionDays: number },
): Promise<{ requests: RequestRecord[]; next_cursor: string }> {
  const { records, next_cursor } = await queryPage(pool, searchQuery(request, options.nowMs, options.retentionDays), recordOf);
  return { requests: records, next_cursor };
}

/** One request by its event id or request id (the newest of a repeated request id); undefined when absent. */
export async function getRequest(pool: pg.Pool, id: string): Promise<RequestRecord | undefined> {
  const row = await rowById<Row>(pool, 'request_log', id);
  return row && recordOf(row);
}
