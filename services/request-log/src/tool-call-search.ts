/**
 * The searches of the MCP tool calls, as SQL: every filter a bound parameter, ordered by time and
 * event id, paged by keyset like the requests (request-search.ts's cursor: the last row's time
 * and event id, so a deep page costs what the first does).
 */
import { GatewayError } from '@gateway/grpc';
import type { SearchToolCallsRequestOutput, ToolCallRecord } from '@gateway/proto';
import type pg from 'pg';
import { DEFAULT_PAGE_SIZE, decodeCursor, encodeCursor, MAX_PAGE_SIZE, type PageQuery, queryPage, rowById } from './request-search.js';
import { type ToolCallRow, toolCallRecordOf } from './tool-call-record.js';

/** The sort a tool-call cursor belongs to: the only one, by time. */
const SORT = 'SORT_FIELD_TIME';

function invalid(message: string, param: string): GatewayError {
  return GatewayError.of('invalid_request', message, { param });
}

/** A tool-call search as its SQL and parameters, plus how to read its next cursor. */
export type ToolCallQuery = PageQuery<ToolCallRow>;

/** Builds a tool-call search's query; INVALID_ARGUMENT for a malformed one. */
export function toolCallQuery(request: SearchToolCallsRequestOutput, nowMs: number, retentionDays: number): ToolCallQuery {
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
  const equal = (field: string, value: string | undefined) => {
    if (value) where.push(`${field} = ${bind(value)}`);
  };
  equal('key_id', request.key_id);
  equal('team_id', request.team_id);
  equal('server', request.server);
  equal('tool', request.tool);
  equal('outcome', request.outcome);
  const direction = ascending ? 'ASC' : 'DESC';
  if (request.cursor) {
    const cursor = decodeCursor(request.cursor, SORT, ascending);
    where.push(`(received_at, event_id) ${ascending ? '>' : '<'} (${bind(new Date(cursor.receivedAtMs))}, ${bind(cursor.eventId)})`);
  }
  return {
    // One row more than the page tells whether another page follows.
    text: `SELECT * FROM tool_calls WHERE ${where.join(' AND ')} ORDER BY received_at ${direction}, event_id ${direction} LIMIT ${pageSize + 1}`,
    values,
    pageSize,
    cursorOf: (row) =>
      encodeCursor({ sort: SORT, ascending, value: String(row.received_at.getTime()), receivedAtMs: row.received_at.getTime(), eventId: row.event_id }),
  };
}

/** Runs a tool-call search: a page of records and the cursor of the next one (empty at the last). */
export async function searchToolCalls(
  pool: pg.Pool,
  request: SearchToolCallsRequestOutput,
  options: { nowMs: number; retentionDays: number },
): Promise<{ tool_calls: ToolCallRecord[]; next_cursor: string }> {
  const { records, next_cursor } = await queryPage(pool, toolCallQuery(request, options.nowMs, options.retentionDays), toolCallRecordOf);
  return { tool_calls: records, next_cursor };
}

/** One tool call by its event id or request id (the newest of a repeated request id); undefined when absent. */
export async function getToolCall(pool: pg.Pool, id: string): Promise<ToolCallRecord | undefined> {
  const row = await rowById<ToolCallRow>(pool, 'tool_calls', id);
  return row && toolCallRecordOf(row);
}
