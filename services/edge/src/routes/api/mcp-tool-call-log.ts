/**
 * The request log's row of an MCP tools/call answered at /mcp: a ToolCallEvent on the tool-calls
 * stream (only with a request log), with who called which tool on which server, how it ended, how
 * long the upstream took and the guardrail decisions made for its arguments and result (where
 * each was found, never the text found). For a key or team with `log_bodies` on, the call's
 * message as forwarded upstream and the answer sent back go as its RequestBodies (the call's event
 * id) on the bodies stream, each redacted and capped as a completion's bodies are
 * (body-redaction.ts): a message a policy blocked, or a limit refused before any policy saw it,
 * is never kept, only the answer. Published on a later turn of the event loop, so that neither the
 * encoding nor the redaction ever delays an answer, and never failing one.
 */
import { randomUUID } from 'node:crypto';
import type { CheckKeyResponseOutput, GuardDecisionOutput, GuardrailDecision } from '@gateway/proto';
import { keptBody } from '../../completions/body-redaction.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { decisionJson, type GuardedRequest } from '../../guardrails/request-guard.js';

/**
 * How a tool call ended, as the log keeps it: `ok`; `error` (the upstream failed or timed out, the
 * tool is unknown or answered isError); `blocked` (a guardrail policy blocked its arguments or its
 * result); `denied` (the key's tool allow-lists do not allow the tool); `limited` (a rate limit or
 * budget of the key refused it); `unavailable` (the MCP service did not answer).
 */
export type ToolCallOutcome = 'ok' | 'error' | 'blocked' | 'denied' | 'limited' | 'unavailable';

/** One tools/call as the edge saw it end. */
export interface AnsweredToolCall {
  requestId: string;
  receivedAtMs: number;
  decision: CheckKeyResponseOutput;
  server: string;
  tool: string;
  outcome: ToolCallOutcome;
  errorCode: string;
  latencyMs: number;
  guard?: GuardedRequest | undefined;
  /** The message as forwarded upstream (masked where a policy masked it); '' when none was. */
  forwarded: string;
  /** The JSON-RPC answer sent to the caller; '' when there was none. */
  answer: string;
}

/** The server and tool a tools/call message names (`<server>__<tool>`); empty when it names none of that form. */
export function namedTool(messageJson: string): { server: string; tool: string } {
  try {
    const name: unknown = (JSON.parse(messageJson) as { params?: { name?: unknown } } | null)?.params?.name;
    if (typeof name !== 'string') return { server: '', tool: '' };
    const split = name.indexOf('__');
    return split > 0 ? { server: name.slice(0, split), tool: name.slice(split + 2) } : { server: '', tool: name };
  } catch {
    return { server: '', tool: '' };
  }
}

/** A guard decision as the tool call's row keeps it: the request log's fields and where it was found. */
export function toolCallDecision(decision: GuardDecisionOutput): GuardrailDecision {
  const start = decision.start ?? -1;
  const end = decision.end ?? -1;
  return {
    ...decisionJson(decision),
    path: decision.path ?? '',
    ...(start >= 0 && { start }),
    ...(end >= 0 && { end }),
  };
}

/** Publishes a tool call's row (and its bodies, when its key keeps them); see the file's comment. */
export function logToolCall(deps: Pick<EdgeDependencies, 'toolCalls' | 'bodies' | 'config' | 'logger'>, call: AnsweredToolCall): void {
  const toolCalls = deps.toolCalls;
  if (!toolCalls) return;
  const keyId = call.decision.key_id ?? '';
  // No key (refused before auth named one): nobody to log it for.
  if (!keyId) return;
  setImmediate(() => {
    try {
      const eventId = randomUUID();
      toolCalls.publish({
        event_id: eventId,
        request_id: call.requestId,
        received_at_ms: call.receivedAtMs,
        key_id: keyId,
        team_id: call.decision.team_id ?? '',
        server: call.server,
        tool: call.tool,
        outcome: call.outcome,
        error_code: call.errorCode,
        latency_ms: call.latencyMs,
        guardrails: (call.guard?.decisions ?? []).map(toolCallDecision),
      });
      if (!deps.bodies || call.decision.log_bodies !== true) return;
      const maxBytes = deps.config.REQUEST_LOG_BODY_MAX_BYTES;
      const request = keptBody(call.forwarded, maxBytes);
      const response = keptBody(call.answer, maxBytes);
      deps.bodies.publish({
        event_id: eventId,
        received_at_ms: call.receivedAtMs,
        key_id: keyId,
        request: request.text,
        response: response.text,
        request_truncated_bytes: request.truncatedBytes,
        response_truncated_bytes: response.truncatedBytes,
      });
    } catch (error) {
      deps.logger.warn({ err: { message: (error as Error).message }, request_id: call.requestId }, 'tool call not logged');
    }
  });
}
