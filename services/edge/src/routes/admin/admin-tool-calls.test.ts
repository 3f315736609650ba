/**
 * The admin API's tool-call routes against an in-process fake of the RequestLogService's gRPC
 * methods: what each query asks the log for, the 400s of malformed ones, the envelope and a
 * decision's place, and the detail's bodies.
 */
import { GatewayError } from '@gateway/grpc';
import type { RequestLogServiceClient, ToolCallRecordOutput } from '@gateway/proto';
import { beforeEach, describe, expect, it } from 'vitest';
import { fakeGrpcClient, injectAs, recordingEdge } from '../../testing/test-edge.js';

const ADMIN_TOKEN = 'admin-token-for-tool-call-tests-0123456789abcdef';
const KEY_ID = 'key_0123456789abcdef';
const TEAM_ID = 'team_0123456789abcdef';

let pages: Array<{ tool_calls: ToolCallRecordOutput[]; next_cursor: string }> = [];

const record: ToolCallRecordOutput = {
  event_id: 'e1',
  request_id: 'r1',
  received_at_ms: 1_700_000_000_000,
  key_id: KEY_ID,
  team_id: '',
  server: 'web',
  tool: 'echo',
  outcome: 'blocked',
  error_code: 'content_policy_violation',
  latency_ms: 0,
  guardrails: [
    {
      policy: 'p',
      check: 'cards',
      point: 'tool_arguments',
      action: 'block',
      enforced: true,
      entity: 'card',
      error: '',
      path: 'params.arguments.text',
      start: 9,
      end: 28,
    },
    { policy: 'p', check: 'size', point: 'tool_result', action: 'flag', enforced: false, entity: 'limit', error: '', path: 'result.content[0].text' },
  ],
} as ToolCallRecordOutput;

const { app, received } = recordingEdge({ EDGE_ADMIN_TOKEN: ADMIN_TOKEN }, (recorded) => ({
  requestLog: fakeGrpcClient<RequestLogServiceClient>(
    {
      SearchToolCalls: () => pages.shift() ?? { tool_calls: [], next_cursor: '' },
      GetToolCall: (request: Record<string, unknown>) =>
        request.id === 'e1'
          ? { tool_call: record, bodies: { event_id: 'e1', request: '{"method":"tools/call"}', response: '{"result":{}}', response_truncated_bytes: 10 } }
          : GatewayError.of('not_found', `The request log has no tool call ${request.id}.`, { param: 'id' }),
    },
    recorded,
  ),
}));

beforeEach(() => {
  pages = [];
});

const get = (url: string) => injectAs(app(), ADMIN_TOKEN, 'GET', url);

describe('GET /admin/v1/tool-calls', () => {
  it('asks the log for exactly the search the query names, and answers the envelope of the requests', async () => {
    pages = [{ tool_calls: [record], next_cursor: 'next' }];
    const response = await get(
      `/admin/v1/tool-calls?start=100&end=200&key_id=${KEY_ID}&team_id=${TEAM_ID}&server=web&tool=echo&outcome=blocked&order=asc&limit=10&cursor=abc_-1`,
    );
    expect(response.statusCode).toBe(200);
    expect(received).toEqual([
      {
        method: 'SearchToolCalls',
        request: {
          start_ms: 100_000,
          end_ms: 200_000,
          key_id: KEY_ID,
          team_id: TEAM_ID,
          server: 'web',
          tool: 'echo',
          outcome: 'blocked',
          ascending: true,
          page_size: 10,
          cursor: 'abc_-1',
        },
      },
    ]);
    expect(response.json()).toEqual({
      object: 'list',
      has_more: true,
      next_cursor: 'next',
      data: [
        {
          object: 'gateway.tool_call',
          id: 'e1',
          request_id: 'r1',
          created_at: 1_700_000_000_000,
          key_id: KEY_ID,
          team_id: null,
          server: 'web',
          tool: 'echo',
          outcome: 'blocked',
          error_code: 'content_policy_violation',
          latency_ms: 0,
          guardrails: [
            {
              policy: 'p',
              check: 'cards',
              point: 'tool_arguments',
              action: 'block',
              enforced: true,
              entity: 'card',
              path: 'params.arguments.text',
              start: 9,
              end: 28,
            },
            {
              policy: 'p',
              check: 'size',
              point: 'tool_result',
              action: 'flag',
              enforced: false,
              entity: 'limit',
              path: 'result.content[0].text',
              start: null,
              end: null,
            },
          ],
        },
      ],
    });
  });

  it.each([
    ['?outcome=failed', 'outcome', "'outcome' must be one of ok, error, blocked, denied, limited, unavailable."],
    ['?server=Web%20Tools', 'server', "'server' must be an MCP server's name (lowercase letters, digits and -)."],
    ['?start=200&end=100', 'end', "'end' must be after 'start'."],
    ['?limit=0', 'limit', "'limit' must be an integer from 1 to 1000."],
  ])('refuses %s', async (query, param, message) => {
    const response = await get(`/admin/v1/tool-calls${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ param, message });
    expect(received).toEqual([]);
  });

  it('refuses a parameter it does not take', async () => {
    const response = await get('/admin/v1/tool-calls?model=sim-mini');
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('unknown_parameter');
  });
});

describe('GET /admin/v1/tool-calls/{id}', () => {
  it("answers a call with its bodies for an admin, and the log's 404 for an unknown id", async () => {
    const found = await get('/admin/v1/tool-calls/e1');
    expect(found.statusCode).toBe(200);
    expect(found.json()).toMatchObject({
      id: 'e1',
      outcome: 'blocked',
      bodies: {
        request: '{"method":"tools/call"}',
        response: '{"result":{}}',
        request_truncated: false,
        response_truncated: true,
        response_truncated_bytes: 10,
      },
    });
    expect(received.at(-1)).toMatchObject({ method: 'GetToolCall', request: { id: 'e1', include_bodies: true } });
    const missing = await get('/admin/v1/tool-calls/nope');
    expect(missing.statusCode).toBe(404);
  });
});
