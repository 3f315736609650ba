/** The request log's MCP tool calls (GET /admin/v1/tool-calls): the query of a search, and a tool call's answer. */
import { type Static, Type } from '@sinclair/typebox';
import { KeyIdParameter, queryNames, queryParameter, steps, TeamIdParameter, UnixSeconds } from './common.js';
import type { LoggedBodies } from './requests.js';

/** How a tool call ended, as the log keeps it (ToolCallEvent.outcome). */
export const TOOL_CALL_OUTCOMES = ['ok', 'error', 'blocked', 'denied', 'limited', 'unavailable'] as const;

/** The query string of GET /admin/v1/tool-calls: its filters, order and page. */
export const ToolCallQuerySchema = steps(
  queryNames(['limit', 'key_id', 'team_id', 'server', 'tool', 'outcome', 'start', 'end', 'order', 'cursor']),
  Type.Object({
    limit: Type.Optional(queryParameter('limit', '^(?!0+$)(?:[0-9]{1,3}|1000)$', "'limit' must be an integer from 1 to 1000.")),
    key_id: Type.Optional(KeyIdParameter),
    team_id: Type.Optional(TeamIdParameter),
    server: Type.Optional(queryParameter('server', '^[a-z0-9-]{1,64}$', "'server' must be an MCP server's name (lowercase letters, digits and -).")),
    tool: Type.Optional(queryParameter('tool', '^[A-Za-z0-9_.-]{1,128}$', "'tool' must be a tool's name on its server (letters, digits, _, . and -).")),
    outcome: Type.Optional(queryParameter('outcome', `^(${TOOL_CALL_OUTCOMES.join('|')})$`, `'outcome' must be one of ${TOOL_CALL_OUTCOMES.join(', ')}.`)),
    start: Type.Optional(UnixSeconds('start')),
    end: Type.Optional(UnixSeconds('end')),
    order: Type.Optional(queryParameter('order', '^(asc|desc)$', "'order' must be asc or desc.")),
    cursor: Type.Optional(queryParameter('cursor', '^[A-Za-z0-9_-]{1,1000}$', "'cursor' must be the next_cursor of a previous page.")),
  }),
);
export type ToolCallQuery = Static<typeof ToolCallQuerySchema>;

/** One guardrail decision of a tool call: a request's, and where it was found (never the text). */
export interface LoggedToolCallGuardrail {
  policy: string;
  check: string;
  point: string;
  action: string;
  enforced: boolean;
  entity: string;
  error?: string;
  /** The checked text's path (`params.arguments.query`, `result.content[0].text`). */
  path: string;
  /** The span's UTF-16 offsets in that text; null when the finding has none (a limit). */
  start: number | null;
  end: number | null;
}

/** A tool call as GET /admin/v1/tool-calls shows it. */
export interface LoggedToolCall {
  object: 'gateway.tool_call';
  id: string;
  request_id: string;
  /** Unix milliseconds when the edge received the call. */
  created_at: number;
  key_id: string;
  team_id: string | null;
  server: string;
  tool: string;
  outcome: string;
  error_code: string | null;
  latency_ms: number;
  guardrails: LoggedToolCallGuardrail[];
}

/** A tool call's detail: its fields, and its message and answer (null when none are kept, or when the caller may not see them). */
export type LoggedToolCallDetail = LoggedToolCall & { bodies: LoggedBodies | null };
