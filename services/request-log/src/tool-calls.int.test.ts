/**
 * MCP tool calls in the request log, against a real PostgreSQL (a database of this run's own) and
 * a real JetStream (streams of their own): a ToolCallEvent on the tool-calls stream becomes one row
 * of tool_calls however often delivered, with its guardrail decisions; its bodies (the arguments
 * and the result, on the bodies stream under its event id) are read with its detail only when
 * asked for, and a call without them has none; every filter and page of SearchToolCalls.
 */
import { randomUUID } from 'node:crypto';
import { callUnary } from '@gateway/grpc';
import { bodiesNames, encodeRequestBodies, encodeToolCallEvent, toolCallNames } from '@gateway/messaging';
import type {
  GetToolCallRequest,
  GetToolCallResponseOutput,
  RequestLogServiceClient,
  SearchToolCallsRequest,
  SearchToolCallsResponseOutput,
  ToolCallEvent,
} from '@gateway/proto';
import { eventually } from '@gateway/testing';
import type { NatsConnection } from 'nats';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestRequestLogDatabase, startTestRequestLog, type TestRequestLog, type TestRequestLogDatabase } from './testing/request-log-service.js';
import { testRequestLogSetting } from './testing/request-log-setting.js';

const setting = testRequestLogSetting('tc');
const { names, registry } = setting;
const toolCallStream = toolCallNames(names.stream);
const bodiesStream = bodiesNames(names.stream);
const KEY = 'key_TTTTTTTTTTTTTTTT';
const OTHER_KEY = 'key_UUUUUUUUUUUUUUUU';

let reqlogDatabase: TestRequestLogDatabase;
let pool: pg.Pool;
let nc: NatsConnection;
let service: TestRequestLog;
let client: RequestLogServiceClient;

/** A tool call of KEY, received `agoMs` before now; `fields` change it. */
function toolCall(fields: Partial<ToolCallEvent> = {}, agoMs = 0): ToolCallEvent {
  return {
    event_id: randomUUID(),
    request_id: `req-${randomUUID()}`,
    received_at_ms: Date.now() - agoMs,
    key_id: KEY,
    team_id: 'team_tools',
    server: 'docs',
    tool: 'search',
    outcome: 'ok',
    latency_ms: 12,
    ...fields,
  };
}

/** Publishes a call `times` times, each under another message id (an edge publishing again): only the table can de-duplicate them. */
async function publish(event: ToolCallEvent, times = 1): Promise<void> {
  for (let time = 0; time < times; time += 1)
    await nc.jetstream().publish(toolCallStream.subject, encodeToolCallEvent(event), { msgID: `${event.event_id}-${time}` });
}

const rowsOf = async (eventId: string) =>
  (await pool.query<{ count: number }>('SELECT count(*)::int AS count FROM tool_calls WHERE event_id = $1', [eventId])).rows[0]!.count;

const search = (request: SearchToolCallsRequest) =>
  callUnary<SearchToolCallsRequest, SearchToolCallsResponseOutput>(client, client.SearchToolCalls, request, { deadlineMs: 5_000 });
const get = (id: string, includeBodies: boolean) =>
  callUnary<GetToolCallRequest, GetToolCallResponseOutput>(client, client.GetToolCall, { id, include_bodies: includeBodies }, { deadlineMs: 5_000 });

/** Waits until the tool-calls consumer has handled (and acknowledged) every delivery. */
const allAcknowledged = () =>
  eventually(async () => {
    const info = await (await nc.jetstreamManager()).consumers.info(toolCallStream.stream, setting.durableName);
    return info.num_pending + info.num_ack_pending === 0;
  }, 'every delivery of the tool calls acknowledged');

beforeAll(async () => {
  reqlogDatabase = await createTestRequestLogDatabase(4);
  ({ pool } = reqlogDatabase);
  service = await startTestRequestLog({ ...setting.dependencies, pool, aheadDays: 1 });
  ({ nc, client } = service);
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await reqlogDatabase?.drop();
}, 30_000);

describe('tool calls', () => {
  it('writes a tool call as one row however often it is delivered, with its fields and guardrail decisions', async () => {
    const call = toolCall({
      outcome: 'blocked',
      error_code: 'content_policy_violation',
      latency_ms: 0,
      guardrails: [
        {
          policy: 'no-cards',
          check: 'pii',
          point: 'tool_arguments',
          action: 'block',
          enforced: true,
          entity: 'card',
          path: 'params.arguments.query',
          start: 4,
          end: 23,
        },
      ],
    });
    await publish(call, 3);
    await eventually(async () => (await rowsOf(call.event_id!)) === 1, 'the tool call', 15_000);
    await allAcknowledged();
    expect(await rowsOf(call.event_id!)).toBe(1);
    const inserted = await registry.getSingleMetric('gateway_request_log_tool_calls_total')?.get();
    const byResult = Object.fromEntries((inserted?.values ?? []).map((value) => [value.labels.result, value.value]));
    expect(byResult.inserted).toBeGreaterThanOrEqual(1);
    expect(byResult.duplicate).toBeGreaterThanOrEqual(2);

    const found = await get(call.event_id!, false);
    expect(found.tool_call).toMatchObject({
      event_id: call.event_id,
      request_id: call.request_id,
      received_at_ms: call.received_at_ms,
      key_id: KEY,
      team_id: 'team_tools',
      server: 'docs',
      tool: 'search',
      outcome: 'blocked',
      error_code: 'content_policy_violation',
      latency_ms: 0,
    });
    expect(found.tool_call?.guardrails).toMatchObject([
      {
        policy: 'no-cards',
        check: 'pii',
        point: 'tool_arguments',
        action: 'block',
        enforced: true,
        entity: 'card',
        error: '',
        path: 'params.arguments.query',
        start: 4,
        end: 23,
      },
    ]);
    // By the request id of its /mcp request too.
    expect((await get(call.request_id!, false)).tool_call?.event_id).toBe(call.event_id);
  }, 30_000);

  it("reads a call's arguments and result only when asked, and a call without bodies has none", async () => {
    const kept = toolCall();
    const bodies = {
      event_id: kept.event_id,
      received_at_ms: kept.received_at_ms,
      key_id: KEY,
      request: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'docs__search', arguments: { query: 'token [REDACTED]' } } }),
      response: JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'found' }] } }),
    };
    await publish(kept);
    await nc.jetstream().publish(bodiesStream.subject, encodeRequestBodies(bodies), { msgID: kept.event_id! });
    const plain = toolCall();
    await publish(plain);
    await eventually(async () => (await rowsOf(kept.event_id!)) === 1 && (await rowsOf(plain.event_id!)) === 1, 'both calls', 15_000);
    await eventually(async () => (await get(kept.event_id!, true)).bodies !== null, 'the bodies of the call that keeps them', 15_000);

    const withBodies = await get(kept.event_id!, true);
    expect(withBodies.bodies).toMatchObject({ event_id: kept.event_id, request: bodies.request, response: bodies.response });
    expect((await get(kept.event_id!, false)).bodies ?? undefined).toBeUndefined();
    const none = await get(plain.event_id!, true);
    expect(none.tool_call?.event_id).toBe(plain.event_id);
    expect(none.bodies ?? undefined).toBeUndefined();
  }, 30_000);

  it('searches by key, team, server, tool, outcome and time, a page at a time', async () => {
    const startMs = Date.now() - 60_000;
    const calls = [
      toolCall({ key_id: OTHER_KEY, team_id: '', server: 'github', tool: 'create_issue', outcome: 'denied', error_code: 'tool_not_allowed' }, 3_000),
      toolCall({ key_id: OTHER_KEY, team_id: '', server: 'github', tool: 'get_issue', outcome: 'ok' }, 2_000),
      toolCall({ key_id: OTHER_KEY, team_id: '', server: 'github', tool: 'get_issue', outcome: 'error', error_code: 'timeout' }, 1_000),
    ];
    for (const call of calls) await publish(call);
    await eventually(async () => (await Promise.all(calls.map((call) => rowsOf(call.event_id!)))).every((count) => count === 1), 'the calls', 15_000);

    const ids = (page: SearchToolCallsResponseOutput) => page.tool_calls.map((call) => call.event_id);
    expect(ids(await search({ key_id: OTHER_KEY, start_ms: startMs }))).toEqual([calls[2]!.event_id, calls[1]!.event_id, calls[0]!.event_id]);
    expect(ids(await search({ key_id: OTHER_KEY, start_ms: startMs, ascending: true }))).toEqual(calls.map((call) => call.event_id));
    expect(ids(await search({ key_id: OTHER_KEY, tool: 'get_issue' }))).toEqual([calls[2]!.event_id, calls[1]!.event_id]);
    expect(ids(await search({ key_id: OTHER_KEY, outcome: 'denied' }))).toEqual([calls[0]!.event_id]);
    expect(ids(await search({ server: 'github', outcome: 'error' }))).toEqual([calls[2]!.event_id]);
    expect(ids(await search({ team_id: 'team_tools', server: 'github' }))).toEqual([]);
    expect(ids(await search({ key_id: OTHER_KEY, end_ms: calls[1]!.received_at_ms! }))).toEqual([calls[0]!.event_id]);

    // Two pages of two and one.
    const first = await search({ key_id: OTHER_KEY, page_size: 2 });
    expect(ids(first)).toEqual([calls[2]!.event_id, calls[1]!.event_id]);
    expect(first.next_cursor).not.toBe('');
    const second = await search({ key_id: OTHER_KEY, page_size: 2, cursor: first.next_cursor });
    expect(ids(second)).toEqual([calls[0]!.event_id]);
    expect(second.next_cursor).toBe('');

    await expect(search({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ reason: 'invalid_request' });
    await expect(search({ page_size: 5_000 })).rejects.toMatchObject({ reason: 'invalid_request' });
    await expect(get(randomUUID(), false)).rejects.toMatchObject({ reason: 'not_found' });
  }, 30_000);

  it('keeps the calls of a day until the requests of that day go, in partitions of their own', async () => {
    const { rows } = await pool.query<{ name: string }>(
      "SELECT child.relname AS name FROM pg_inherits JOIN pg_class parent ON parent.oid = inhparent JOIN pg_class child ON child.oid = inhrelid WHERE parent.relname = 'tool_calls'",
    );
    expect(rows.map((row) => row.name)).toContainEqual(expect.stringMatching(/^tool_calls_p\d{8}$/));
  });
});
