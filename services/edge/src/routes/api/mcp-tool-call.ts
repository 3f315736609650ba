/**
 * One MCP tools/call at /mcp, from the key's decision to its answer. The call counts against the
 * key's limits and budgets (a refusal is the tool's JSON-RPC answer, code LIMITED_CODE, which the
 * client shows; a bad key is a 401); its arguments and result pass the guardrails attached to the
 * key or its team; it is traced; and however it ends, it is metered (a usage event, operation
 * `mcp.tools/call`, model the namespaced tool), audited (auth's audit trail and a log line: key,
 * team, server, tool; never arguments or results) and, with a request log, kept as a row of it
 * (mcp-tool-call-log.ts). A call a limit refused is only kept as a row: nothing ran.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { callUnary, GatewayError } from '@gateway/grpc';
import type { CheckKeyResponseOutput, McpServiceClient, RecordToolCallRequest, RecordToolCallResponseOutput, UsageEvent } from '@gateway/proto';
import { denialError } from '../../auth/key-check.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { guardToolArguments, guardToolResult } from '../../guardrails/mcp-guard.js';
import { decisionJson, type GuardedRequest, guardChecksOf, guardFor } from '../../guardrails/request-guard.js';
import { handleMessage, mcpFailure, sendAnswer } from './mcp-calls.js';
import { logToolCall, namedTool, type ToolCallOutcome } from './mcp-tool-call-log.js';

/** A JSON-RPC error code of the gateway: a limit or budget of the key refused a tools/call. */
const LIMITED_CODE = -32004;

/** A tools/call message as the edge received it (its request), with the key's decision (counted) for it. */
export interface ToolCallMessage {
  request: FastifyRequest;
  id: string | number | null;
  text: string;
  receivedAtMs: number;
  decision: CheckKeyResponseOutput;
}

/** How a tools/call ended, as metered and audited: the server and tool the MCP service named ('' when it ran none). */
interface EndedCall {
  server: string;
  tool: string;
  failed: boolean;
  errorCode: string;
  latencyMs: number;
}

/** The record of one tools/call: metered and audited, and its request-log row, once it ends. */
class ToolCallRecord {
  constructor(
    private readonly deps: EdgeDependencies,
    private readonly message: ToolCallMessage,
    private readonly guard: GuardedRequest | undefined,
  ) {}

  /**
   * Meters and audits the call as it ran, and logs its row with what was forwarded upstream and
   * answered (the row's own error code where a policy blocked a result the tool gave).
   */
  end(call: EndedCall, row: { server: string; tool: string; outcome: ToolCallOutcome; errorCode?: string; forwarded: string; answer: string }): void {
    meter(this.deps, this.message, call, this.guard);
    logToolCall(this.deps, {
      requestId: this.message.request.id,
      receivedAtMs: this.message.receivedAtMs,
      decision: this.message.decision,
      ...row,
      errorCode: row.errorCode ?? call.errorCode,
      latencyMs: call.latencyMs,
      guard: this.guard,
    });
  }
}

/** Answers a tools/call: refused by a limit, blocked by a policy, or relayed to the MCP service. */
export async function callTool(deps: EdgeDependencies, mcp: McpServiceClient, reply: FastifyReply, message: ToolCallMessage): Promise<string> {
  const { decision, request } = message;
  if (decision.decision !== 'DECISION_ALLOW') return refuse(deps, reply, message);
  const span = deps.tracing?.startSpan('mcp.tools/call', { attributes: { 'gateway.key_id': decision.key_id ?? '' } });
  const traceparent = deps.tracing?.traceparentOf(span);
  const guard = guardFor(
    guardChecksOf(deps),
    { requestId: request.id, keyId: decision.key_id ?? '', teamId: decision.team_id ?? '', model: '', api: 'mcp', traceparent },
    ['POINT_TOOL_ARGUMENTS', 'POINT_TOOL_RESULT'],
  );
  const record = new ToolCallRecord(deps, message, guard);
  try {
    let forwarded = message.text;
    if (guard) {
      const outcome = await guardToolArguments(guard, message.id, message.text);
      if ('answer' in outcome) {
        // The arguments a policy blocked are never kept: only the answer.
        record.end(
          { server: '', tool: '', failed: true, errorCode: 'content_policy_violation', latencyMs: 0 },
          { ...namedTool(message.text), outcome: 'blocked', forwarded: '', answer: outcome.answer },
        );
        void reply.header('content-type', 'application/json');
        return outcome.answer;
      }
      forwarded = outcome.forward;
    }
    let answer: Awaited<ReturnType<typeof handleMessage>>;
    try {
      answer = await handleMessage(deps, mcp, request, { decision, json: forwarded, traceparent });
    } catch (error) {
      record.end(
        { server: '', tool: '', failed: true, errorCode: 'mcp_unavailable', latencyMs: 0 },
        { ...namedTool(forwarded), outcome: 'unavailable', forwarded, answer: '' },
      );
      throw mcpFailure(deps, error, request.id);
    }
    const messageJson = guard && answer.message_json ? await guardToolResult(guard, answer.message_json) : answer.message_json;
    const call = answer.tool_call;
    if (call) {
      const server = call.server ?? '';
      const tool = call.tool ?? '';
      span?.setAttributes({ 'gateway.mcp.server': server, 'gateway.mcp.tool': tool, 'gateway.mcp.failed': call.failed === true });
      const blocked = guard?.decisions.some((made) => made.point === 'POINT_TOOL_RESULT' && made.action === 'ACTION_BLOCK' && made.enforced === true) === true;
      const outcome: ToolCallOutcome = blocked ? 'blocked' : !call.failed ? 'ok' : call.error_code === 'tool_not_allowed' ? 'denied' : 'error';
      const ran = { server, tool, failed: call.failed === true, errorCode: call.error_code ?? '', latencyMs: call.latency_ms ?? 0 };
      record.end(ran, { server, tool, outcome, ...(blocked ? { errorCode: 'content_policy_violation' } : {}), forwarded, answer: messageJson ?? '' });
    }
    return sendAnswer(reply, answer, messageJson);
  } finally {
    span?.end();
  }
}

/** A limit or budget refused the call: the tool's answer, kept as a row (nothing forwarded, nothing for a policy). */
function refuse(deps: EdgeDependencies, reply: FastifyReply, message: ToolCallMessage): string {
  const { request } = message;
  const refusal = denialError(message.decision);
  if (refusal.status === 401) throw refusal;
  const limited = JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: LIMITED_CODE, message: refusal.message } });
  logToolCall(deps, {
    requestId: request.id,
    receivedAtMs: message.receivedAtMs,
    decision: message.decision,
    ...namedTool(message.text),
    outcome: 'limited',
    errorCode: refusal.code ?? '',
    latencyMs: 0,
    forwarded: '',
    answer: limited,
  });
  void reply.header('content-type', 'application/json');
  return limited;
}

/** Meters, and logs as an audit line, one tools/call: who called which tool on which server, never its arguments or result. */
function meter(deps: EdgeDependencies, message: ToolCallMessage, call: EndedCall, guard: GuardedRequest | undefined): void {
  const { decision, request } = message;
  const keyId = decision.key_id ?? '';
  const teamId = decision.team_id ?? '';
  const tool = call.server ? `${call.server}__${call.tool}` : 'unknown';
  deps.logger.info(
    {
      audit: 'mcp.tools/call',
      request_id: request.id,
      key_id: keyId,
      team_id: teamId || undefined,
      server: call.server,
      tool: call.tool,
      failed: call.failed,
      error_code: call.errorCode || undefined,
      latency_ms: call.latencyMs,
    },
    'MCP tool called',
  );
  const event: UsageEvent = {
    event_id: randomUUID(),
    request_id: request.id,
    key_id: keyId,
    ...(teamId ? { team_id: teamId } : {}),
    // The reservation CheckKey made for the call is settled when the event is metered.
    reservation_id: decision.reservation_id ?? '',
    model_id: tool,
    provider: 'mcp',
    received_at_ms: message.receivedAtMs,
    latency_ms: call.latencyMs,
    stream: false,
    outcome: call.failed ? 'OUTCOME_FAILED' : 'OUTCOME_COMPLETED',
    ...(call.errorCode ? { error_code: call.errorCode } : {}),
    operation: 'mcp.tools/call',
    ...(guard && guard.decisions.length > 0 ? { guardrails: guard.decisions.map(decisionJson) } : {}),
  };
  deps.usage.publish(event);
  // The audit trail keeps it too (auth's, beside the admin changes), without holding the answer back.
  callUnary<RecordToolCallRequest, RecordToolCallResponseOutput>(
    deps.adminAccess,
    deps.adminAccess.RecordToolCall,
    {
      key_id: keyId,
      team_id: teamId,
      server: call.server,
      tool: call.tool,
      failed: call.failed,
      error_code: call.errorCode,
      latency_ms: call.latencyMs,
      request_id: request.id,
    },
    { deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId: request.id },
  ).catch((error: unknown) => {
    const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
    deps.logger.warn({ request_id: request.id, reason: failure.reason }, 'a tool call could not be recorded in the audit trail');
  });
}
