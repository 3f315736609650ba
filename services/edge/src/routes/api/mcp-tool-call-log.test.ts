import type { CheckKeyResponseOutput, RequestBodies, ToolCallEvent } from '@gateway/proto';
import { describe, expect, it, vi } from 'vitest';
import type { GuardedRequest } from '../../guardrails/request-guard.js';
import { type AnsweredToolCall, logToolCall, namedTool, toolCallDecision } from './mcp-tool-call-log.js';

const AWS_KEY = 'AKIAIOSFODNN7EXAMPLE';

function harness() {
  const events: ToolCallEvent[] = [];
  const bodies: RequestBodies[] = [];
  const deps = {
    toolCalls: { publish: (event: ToolCallEvent) => events.push(event) },
    bodies: { publish: (kept: RequestBodies) => bodies.push(kept) },
    config: { REQUEST_LOG_BODY_MAX_BYTES: 32 * 1024 },
    logger: { warn: vi.fn() },
  } as unknown as Parameters<typeof logToolCall>[0];
  return { deps, events, bodies };
}

function call(decision: Partial<CheckKeyResponseOutput>, fields: Partial<AnsweredToolCall> = {}): AnsweredToolCall {
  return {
    requestId: 'req-1',
    receivedAtMs: 1_700_000_000_000,
    decision: { decision: 'DECISION_ALLOW', key_id: 'key_A', team_id: 'team_T', ...decision } as CheckKeyResponseOutput,
    server: 'docs',
    tool: 'search',
    outcome: 'ok',
    errorCode: '',
    latencyMs: 7,
    forwarded: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'docs__search', arguments: { query: `key ${AWS_KEY}` } } }),
    answer: JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'found' }] } }),
    ...fields,
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('the request log row of a tool call', () => {
  it('names the server and tool of a namespaced tool, and none of a message that names no tool', () => {
    expect(namedTool(JSON.stringify({ params: { name: 'github__get_issue' } }))).toEqual({ server: 'github', tool: 'get_issue' });
    expect(namedTool(JSON.stringify({ params: { name: 'plain' } }))).toEqual({ server: '', tool: 'plain' });
    expect(namedTool('{not json')).toEqual({ server: '', tool: '' });
  });

  it("keeps a decision's place (path and span) and never its text", () => {
    const decision = toolCallDecision({
      policy: 'p',
      check: 'pii',
      point: 'POINT_TOOL_ARGUMENTS',
      action: 'ACTION_MASK',
      enforced: true,
      entity: 'card',
      path: 'params.arguments.query',
      start: 3,
      end: 22,
    });
    expect(decision).toEqual({
      policy: 'p',
      check: 'pii',
      point: 'tool_arguments',
      action: 'mask',
      enforced: true,
      entity: 'card',
      path: 'params.arguments.query',
      start: 3,
      end: 22,
    });
    expect(toolCallDecision({ policy: 'p', point: 'POINT_TOOL_RESULT', action: 'ACTION_FLAG', start: -1, end: -1 })).not.toHaveProperty('start');
  });

  it('publishes the call after the answer, its bodies only for a key that keeps them, redacted', async () => {
    const { deps, events, bodies } = harness();
    const guard = {
      decisions: [
        {
          policy: 'p',
          check: 'secrets',
          point: 'POINT_TOOL_ARGUMENTS',
          action: 'ACTION_FLAG',
          enforced: true,
          entity: 'aws_access_key',
          path: 'params.arguments.query',
          start: 4,
          end: 24,
        },
      ],
    } as unknown as GuardedRequest;
    logToolCall(deps, call({ log_bodies: false }, { guard }));
    // Nothing on the answer's own turn.
    expect(events).toHaveLength(0);
    await turn();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ request_id: 'req-1', key_id: 'key_A', team_id: 'team_T', server: 'docs', tool: 'search', outcome: 'ok', latency_ms: 7 });
    expect(events[0]!.guardrails).toEqual([
      {
        policy: 'p',
        check: 'secrets',
        point: 'tool_arguments',
        action: 'flag',
        enforced: true,
        entity: 'aws_access_key',
        path: 'params.arguments.query',
        start: 4,
        end: 24,
      },
    ]);
    expect(bodies).toHaveLength(0);

    logToolCall(deps, call({ log_bodies: true }));
    await turn();
    expect(events).toHaveLength(2);
    expect(bodies).toHaveLength(1);
    expect(bodies[0]!.event_id).toBe(events[1]!.event_id);
    expect(bodies[0]!.request).toContain('docs__search');
    expect(bodies[0]!.request).not.toContain(AWS_KEY);
    expect(bodies[0]!.response).toContain('found');
  });

  it('logs nothing without a request log, nor for a call without a key', async () => {
    const { deps, events } = harness();
    logToolCall({ ...deps, toolCalls: undefined }, call({}));
    logToolCall(deps, call({ key_id: '' }));
    await turn();
    expect(events).toHaveLength(0);
  });
});
