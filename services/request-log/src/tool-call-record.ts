/**
 * An MCP tool call (ToolCallEvent) as the log's row in tool_calls, and the row as the
 * RequestLogService answers it.
 */
import { PoisonMessageError } from '@gateway/messaging';
import type { ToolCallEventOutput, ToolCallRecord } from '@gateway/proto';

/** One guardrail decision of a tool call as the log keeps it: a request's, and where it was found. */
export interface ToolCallGuardrail {
  policy: string;
  check: string;
  point: string;
  action: string;
  enforced: boolean;
  entity: string;
  error: string;
  /** The checked text's path (`params.arguments.query`). */
  path: string;
  /** The span's UTF-16 offsets in that text; absent when the finding has none. */
  start?: number;
  end?: number;
}

function guardrailOf(decision: NonNullable<ToolCallEventOutput['guardrails']>[number]): ToolCallGuardrail {
  return {
    policy: decision.policy ?? '',
    check: decision.check ?? '',
    point: decision.point ?? '',
    action: decision.action ?? '',
    enforced: decision.enforced === true,
    entity: decision.entity ?? '',
    error: decision.error ?? '',
    path: decision.path ?? '',
    ...(typeof decision.start === 'number' && { start: decision.start }),
    ...(typeof decision.end === 'number' && { end: decision.end }),
  };
}

/** One row of tool_calls, in the order an INSERT lists its columns (TOOL_CALL_COLUMNS). */
export interface ToolCallRow {
  received_at: Date;
  event_id: string;
  request_id: string;
  key_id: string;
  team_id: string;
  server: string;
  tool: string;
  outcome: string;
  error_code: string;
  latency_ms: number;
  /** JSON text for the jsonb column when written; the parsed array when read back. */
  guardrails: string | ToolCallGuardrail[];
}

/** The columns of a row, in the order an INSERT lists them. */
export const TOOL_CALL_COLUMNS = [
  'received_at',
  'event_id',
  'request_id',
  'key_id',
  'team_id',
  'server',
  'tool',
  'outcome',
  'error_code',
  'latency_ms',
  'guardrails',
] as const satisfies readonly (keyof ToolCallRow)[];

/** The row of a tool call; throws PoisonMessageError for one the log can never hold (no event id, key or time). */
export function toolCallRow(event: ToolCallEventOutput): ToolCallRow {
  if (!event.event_id) throw new PoisonMessageError('missing_event_id', 'tool call without event_id');
  if (!event.key_id) throw new PoisonMessageError('missing_key_id', `tool call ${event.event_id} without key_id`);
  const receivedAtMs = Number(event.received_at_ms ?? 0);
  if (!(receivedAtMs > 0)) throw new PoisonMessageError('missing_received_at', `tool call ${event.event_id} without received_at_ms`);
  return {
    received_at: new Date(receivedAtMs),
    event_id: event.event_id,
    request_id: event.request_id ?? '',
    key_id: event.key_id,
    team_id: event.team_id ?? '',
    server: event.server ?? '',
    tool: event.tool ?? '',
    outcome: event.outcome || 'unspecified',
    error_code: event.error_code ?? '',
    latency_ms: Math.max(0, Math.trunc(event.latency_ms ?? 0)),
    guardrails: JSON.stringify((event.guardrails ?? []).map(guardrailOf)),
  };
}

/** A row as the RequestLogService answers it. */
export function toolCallRecordOf({ received_at, guardrails, ...columns }: ToolCallRow): ToolCallRecord {
  return {
    ...columns,
    // jsonb comes back parsed; text only from a row built in memory.
    guardrails: typeof guardrails === 'string' ? (JSON.parse(guardrails) as ToolCallGuardrail[]) : guardrails,
    received_at_ms: received_at.getTime(),
  };
}
