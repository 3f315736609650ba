/**
 * The admin API's request log routes against an in-process fake of the RequestLogService's gRPC
 * methods: what each query asks the log for, the 400s of malformed ones, an export that follows
 * the cursor to the last page and writes CSV a spreadsheet cannot run, and the detail's 404.
 */
import { GatewayError } from '@gateway/grpc';
import type { RequestLogServiceClient, RequestRecordOutput } from '@gateway/proto';
import { beforeEach, describe, expect, it } from 'vitest';
import { fakeGrpcClient, injectAs, type ReceivedCall, recordingEdge } from '../../testing/test-edge.js';
import { CSV_COLUMNS } from './admin-request-export.js';
import { mayReadBodies } from './admin-request-log.js';

const ADMIN_TOKEN = 'admin-token-for-request-log-tests-0123456789abcdef';
const KEY_ID = 'key_0123456789abcdef';
const TEAM_ID = 'team_0123456789abcdef';

/** The pages SearchRequests answers, in turn. */
let pages: Array<{ requests: RequestRecordOutput[]; next_cursor: string }> = [];

function record(fields: Partial<RequestRecordOutput>): RequestRecordOutput {
  return {
    event_id: 'e',
    request_id: 'r',
    response_id: '',
    trace_id: '',
    received_at_ms: 1_700_000_000_000,
    key_id: KEY_ID,
    team_id: '',
    api: 'chat_completions',
    requested_model: 'sim-mini',
    model_id: 'sim-mini',
    provider: 'simulated',
    fallback_models: [],
    fallback_attempts: 0,
    outcome: 'completed',
    http_status: 200,
    error_code: '',
    prompt_tokens: 10,
    completion_tokens: 5,
    cached_tokens: 0,
    cache_write_tokens: 0,
    reasoning_tokens: 0,
    cost_pico_usd: '1500000',
    latency_ms: 42,
    stream: false,
    user_agent: 'curl/8',
    ...fields,
  } as RequestRecordOutput;
}

function fakeRequestLog(record: (call: ReceivedCall) => void): RequestLogServiceClient {
  return fakeGrpcClient<RequestLogServiceClient>(
    {
      SearchRequests: () => pages.shift() ?? { requests: [], next_cursor: '' },
      GetRequest: (request: Record<string, unknown>) => GatewayError.of('not_found', `The request log has no request ${request.id}.`, { param: 'id' }),
    },
    record,
  );
}

const { app, received } = recordingEdge({ EDGE_ADMIN_TOKEN: ADMIN_TOKEN }, (record) => ({ requestLog: fakeRequestLog(record) }));

beforeEach(() => {
  pages = [];
});

const get = (url: string) => injectAs(app(), ADMIN_TOKEN, 'GET', url);

describe('GET /admin/v1/requests with the request log', () => {
  it('asks the log for exactly the search the query names', async () => {
    pages = [{ requests: [record({ event_id: 'e1', trace_id: 'abc' })], next_cursor: 'next' }];
    const response = await get(
      `/admin/v1/requests?start=100&end=200&key_id=${KEY_ID}&team_id=${TEAM_ID}&model=sim-mini&provider=simulated&status=429` +
        '&deployment=1:https://api.openai.com' +
        '&error_code=rate_limit_exceeded&api=messages&outcome=failed&cache_status=hit&batch_id=batch_AbC123&min_latency_ms=10&max_latency_ms=20&min_cost_usd=0.000000000001' +
        '&max_cost_usd=1.5&sort=cost&order=asc&limit=1000&cursor=abc_-1',
    );
    expect(response.statusCode).toBe(200);
    expect(received).toEqual([
      {
        method: 'SearchRequests',
        request: {
          start_ms: 100_000,
          end_ms: 200_000,
          key_id: KEY_ID,
          team_id: TEAM_ID,
          model: 'sim-mini',
          provider: 'simulated',
          deployment_id: '1:https://api.openai.com',
          http_status: 429,
          error_code: 'rate_limit_exceeded',
          api: 'messages',
          outcome: 'failed',
          cache_status: 'hit',
          batch_id: 'batch_AbC123',
          min_latency_ms: 10,
          max_latency_ms: 20,
          min_cost_pico_usd: 1,
          max_cost_pico_usd: 1_500_000_000_000,
          sort: 'SORT_FIELD_COST',
          ascending: true,
          page_size: 1000,
          cursor: 'abc_-1',
        },
      },
    ]);
    expect(response.json()).toMatchObject({
      object: 'list',
      has_more: true,
      next_cursor: 'next',
      data: [{ id: 'e1', trace_id: 'abc', api: 'chat_completions', cost_pico_usd: '1500000', cost_usd: 0.0000015, http_status: 200, response_id: null }],
    });
  });

  it('shows what the response cache did for each request: a hit with the cost it saved, a miss, none', async () => {
    pages = [
      {
        requests: [
          record({ event_id: 'e1', cache_status: 'hit', cost_pico_usd: '150000', saved_cost_pico_usd: '1500000' }),
          record({ event_id: 'e2', cache_status: 'miss', saved_cost_pico_usd: '0' }),
          record({ event_id: 'e3' }),
        ],
        next_cursor: '',
      },
    ];
    const response = await get('/admin/v1/requests?cache_status=hit');
    expect(response.json().data).toMatchObject([
      { id: 'e1', cache_status: 'hit', cache_age_ms: null, cost_usd: 0.00000015, saved_cost_usd: 0.0000015, saved_cost_pico_usd: '1500000' },
      { id: 'e2', cache_status: 'miss', saved_cost_usd: 0, saved_cost_pico_usd: '0' },
      { id: 'e3', cache_status: null, saved_cost_usd: 0, saved_cost_pico_usd: '0' },
    ]);
  });

  it.each([
    ['?sort=tokens', 'sort', "'sort' must be one of time, latency, cost."],
    ['?status=99', 'status', "'status' must be an HTTP status (100 to 599)."],
    ['?min_cost_usd=-1', 'min_cost_usd', "'min_cost_usd' must be an amount in USD (at most 12 decimals)."],
    ['?min_latency_ms=20&max_latency_ms=10', 'max_latency_ms', "'max_latency_ms' must not be below 'min_latency_ms'."],
    ['?start=200&end=100', 'end', "'end' must be after 'start'."],
    ['?cursor=a%20b', 'cursor', "'cursor' must be the next_cursor of a previous page."],
    ['?format=xml', 'format', "'format' must be one of json, csv, jsonl."],
    ['?cache_status=stale', 'cache_status', "'cache_status' must be one of hit, miss, skip."],
  ])('refuses %s', async (query, param, message) => {
    const response = await get(`/admin/v1/requests${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ param, message });
    expect(received).toEqual([]);
  });

  it('exports every page of the search as CSV that a spreadsheet reads as text', async () => {
    pages = [
      { requests: [record({ event_id: 'e1', user_agent: '=HYPERLINK("http://evil")', fallback_models: ['a', 'b'] })], next_cursor: 'c1' },
      { requests: [record({ event_id: 'e2', error_code: 'upstream_error', user_agent: 'agent, with "quotes"' })], next_cursor: '' },
    ];
    const response = await get('/admin/v1/requests?format=csv&api=chat_completions');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(response.headers['content-disposition']).toMatch(/^attachment; filename="requests-[0-9TZ-]+\.csv"$/);
    const lines = response.body.split('\r\n');
    expect(lines[0]).toBe(CSV_COLUMNS.join(','));
    expect(lines[1]).toContain(`"'=HYPERLINK(""http://evil"")"`);
    expect(lines[1]).toContain(',a b,');
    expect(lines[2]).toContain('"agent, with ""quotes"""');
    expect(lines[3]).toBe('');
    expect(received.map((entry) => [entry.request.cursor, entry.request.page_size])).toEqual([
      ['', 1000],
      ['c1', 1000],
    ]);
  });

  it('exports JSONL, one request a line', async () => {
    pages = [{ requests: [record({ event_id: 'e1' }), record({ event_id: 'e2' })], next_cursor: '' }];
    const response = await get('/admin/v1/requests?format=jsonl');
    expect(response.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(
      response.body
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).id),
    ).toEqual(['e1', 'e2']);
  });

  it("answers a request the log does not have with a 404 in the API's envelope", async () => {
    const response = await get('/admin/v1/requests/req-unknown');
    expect(response.statusCode).toBe(404);
    expect(response.json().error).toMatchObject({ code: 'not_found', message: 'The request log has no request req-unknown.' });
    expect(received).toEqual([{ method: 'GetRequest', request: { id: 'req-unknown', include_bodies: true } }]);
  });
});

describe('who may read request bodies', () => {
  const viewer = (subject: string) => ({ subject, role: 'viewer' as const, via: 'admin_token' as const });

  it('lets an admin always, a viewer only when REQUEST_LOG_BODIES_VIEWERS names it or is *, and nobody else', () => {
    expect(mayReadBodies({ subject: 'static-token', role: 'admin', via: 'static_token' }, '')).toBe(true);
    expect(mayReadBodies(viewer('adt_one'), '')).toBe(false);
    expect(mayReadBodies(viewer('adt_one'), 'adt_two, adt_one')).toBe(true);
    expect(mayReadBodies(viewer('adt_three'), 'adt_two, adt_one')).toBe(false);
    expect(mayReadBodies(viewer('adt_o'), 'adt_one')).toBe(false);
    expect(mayReadBodies(viewer('anyone'), ' * ')).toBe(true);
    expect(mayReadBodies(undefined, '*')).toBe(false);
  });
});
