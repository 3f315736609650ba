/**
 * The request log's export (GET /admin/v1/requests with `format=csv` or `format=jsonl`): every
 * request the search finds, up to EXPORT_MAX_ROWS, read from the request log a page at a time and
 * sent as a download as each page arrives. CSV as RFC 4180 has it, one column per field of
 * CSV_COLUMNS, a text that a spreadsheet would read as a formula quoted as text; JSON Lines, one
 * request's JSON (as the search answers it) a line.
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { callUnary } from '@gateway/grpc';
import type { SearchRequestsRequest, SearchRequestsResponseOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import type { LoggedRequest } from './admin-api-schemas.js';
import { loggedJson } from './admin-request-json.js';
import type { AdminCallOptions } from './admin-scope.js';

/** The most requests one export holds. */
export const EXPORT_MAX_ROWS = 100_000;
/** Requests per call to the request log while exporting. */
const EXPORT_PAGE_SIZE = 1_000;

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
  'cache_status',
  'saved_cost_usd',
  'saved_cost_pico_usd',
  'batch_id',
] as const satisfies readonly (keyof LoggedRequest)[];

/** One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break; a leading =, +, - or @ is quoted text, never a spreadsheet formula. */
function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = Array.isArray(value) ? value.join(' ') : String(value);
  if (/^[=+\-@\t\r]/.test(text) && typeof value === 'string') text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** What an export is of: the search, and the format its lines are in. */
export interface RequestExport {
  deps: EdgeDependencies;
  request: FastifyRequest;
  options: AdminCallOptions;
  search: SearchRequestsRequest;
  format: 'csv' | 'jsonl';
}

/** The lines of an export: every page of the search, up to EXPORT_MAX_ROWS. */
async function* exportLines({ deps, request, options, search, format }: RequestExport): AsyncGenerator<string> {
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

/** Sends an export as a download, page after page as the request log answers them. */
export function sendRequestExport(reply: FastifyReply, wanted: RequestExport): FastifyReply {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return reply
    .header('content-type', wanted.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8')
    .header('content-disposition', `attachment; filename="requests-${stamp}.${wanted.format}"`)
    .send(Readable.from(exportLines(wanted)));
}
