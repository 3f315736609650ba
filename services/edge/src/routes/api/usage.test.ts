/**
 * The usage API's query strings: what each route accepts, and the 400 (code and param) each
 * malformed query answers. Metering and auth are in-process fakes of their gRPC methods.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ListRecentRequestsResponseOutput, QueryUsageResponseOutput, UsageServiceClient } from '@gateway/proto';
import type { AuthDecisions } from '../../clients/auth-decisions.js';
import { fakeGrpcClient, injectAs, recordingEdge } from '../../testing/test-edge.js';

const ADMIN_TOKEN = 'admin-token-for-tests-0123456789abcdef';
const API_KEY = `br-${'k'.repeat(40)}`;
const KEY_ID = 'key_0123456789abcdef';

/** The rows QueryUsage answers with (none unless a test sets them), and the latest requests ListRecentRequests answers. */
let usageRows: QueryUsageResponseOutput['rows'] = [];
let recentRequests: ListRecentRequestsResponseOutput['requests'] = [];

/** The requests metering received, in order. */
const { app, received } = recordingEdge({ EDGE_ADMIN_TOKEN: ADMIN_TOKEN }, (record) => ({
  metering: fakeGrpcClient<UsageServiceClient>({ QueryUsage: () => ({ rows: usageRows }), ListRecentRequests: () => ({ requests: recentRequests }) }, record),
  decisions: { call: async () => ({ decision: 'DECISION_ALLOW', key_id: KEY_ID }) } as unknown as AuthDecisions,
}));

afterEach(() => {
  usageRows = [];
  recentRequests = [];
});

async function get(url: string, token: string) {
  const response = await injectAs(app(), token, 'GET', url);
  return { status: response.statusCode, body: response.json() };
}

function refused(param: string | null, message: string, code = 'invalid_value') {
  return { status: 400, body: { error: { message, type: 'invalid_request_error', param, code } } };
}

const KEY_ALLOWED = 'start, start_time, end, end_time, bucket, bucket_width, group_by';
const START = "'start' must be a time in Unix seconds (a non-negative integer).";

/** [query of GET /v1/usage, param, message, code] of each refused query. */
const REFUSED_KEY_QUERIES: Array<[string, string | null, string, string?]> = [
  ['', 'start', "'start' is required: the range's start in Unix seconds.", 'missing_required_parameter'],
  ['?start=-5', 'start', START],
  ['?start=1e3', 'start', START],
  ['?start_time=x', 'start', START],
  ['?start=1&start=2', 'start', "'start' must be given once."],
  ['?start=100&end=99', 'end', "'end' must not be before 'start'."],
  ['?start=100&end=soon', 'end', "'end' must be a time in Unix seconds (a non-negative integer)."],
  ['?start=100&bucket=week', 'bucket', "'bucket' must be 'hour' or 'day'."],
  ['?start=100&bucket_width=week', 'bucket', "'bucket' must be 'hour' or 'day'."],
  ['?start=100&group_by=model,moon', 'group_by', "'group_by' takes a comma-separated list of model."],
  ['?start=100&group_by=key', 'group_by', "'group_by' takes a comma-separated list of model."],
  ['?start=100&group_by=model,,model', 'group_by', "'group_by' takes a comma-separated list of model."],
  [`?start=100&key_id=${KEY_ID}`, 'key_id', `Unknown query parameter 'key_id'. Allowed: ${KEY_ALLOWED}.`, 'unknown_parameter'],
  ['?bucket=week&moon=1', 'moon', `Unknown query parameter 'moon'. Allowed: ${KEY_ALLOWED}.`, 'unknown_parameter'],
];

describe('GET /v1/usage', () => {
  it.each(REFUSED_KEY_QUERIES)('refuses %s', async (query, param, message, code) => {
    expect(await get(`/v1/usage${query}`, API_KEY)).toEqual(refused(param, message, code));
    expect(received).toEqual([]);
  });

  it("reads OpenAI's names of the parameters, and groups once by each grouping", async () => {
    const answer = await get('/v1/usage?start_time=100&end_time=7300&bucket_width=1h&group_by= model ,model', API_KEY);
    expect(answer).toMatchObject({ status: 200, body: { object: 'page', bucket: 'hour', start: 100, end: 7300, group_by: ['model'] } });
    expect(received).toEqual([{ method: 'QueryUsage', request: { start: 100, end: 7300, bucket: 'BUCKET_WIDTH_HOUR', key_ids: [KEY_ID] } }]);
  });

  it('shows the response-cache hits and the cost they saved, per model and in the totals, in USD and exactly', async () => {
    const counts = (cost: string, hits: number, saved: string) => ({
      requests: 4,
      prompt_tokens: 100,
      cost_pico_usd: cost,
      cache_hits: hits,
      saved_cost_pico_usd: saved,
    });
    usageRows = [
      { start: 3_600, key_id: KEY_ID, model_id: 'sim-mini', counts: counts('1000000', 2, '2500000000000') },
      { start: 3_600, key_id: KEY_ID, model_id: 'sim-pro', counts: counts('7', 1, '1') },
      { start: 7_200, key_id: KEY_ID, model_id: 'sim-mini', counts: { requests: 1, cost_pico_usd: '5' } },
    ];
    const answer = await get('/v1/usage?start=0&end=10800&bucket=hour&group_by=model', API_KEY);
    expect(answer.status).toBe(200);
    expect(answer.body.data.map((bucket: { results: unknown[] }) => bucket.results)).toMatchObject([
      [
        { model: 'sim-mini', cache_hits: 2, saved_cost_usd: 2.5, saved_cost_pico_usd: '2500000000000', cost_usd: 0.000001 },
        { model: 'sim-pro', cache_hits: 1, saved_cost_usd: 1e-12, saved_cost_pico_usd: '1' },
      ],
      [{ model: 'sim-mini', requests: 1, cache_hits: 0, saved_cost_usd: 0, saved_cost_pico_usd: '0' }],
    ]);
    expect(answer.body.totals).toMatchObject({ requests: 9, cache_hits: 3, saved_cost_usd: 2.500000000001, saved_cost_pico_usd: '2500000000001' });
  });

  it('takes a day bucket and no grouping by default, and ours over an alias given too', async () => {
    const answer = await get('/v1/usage?start=100&start_time=oops&end=200&group_by=', API_KEY);
    expect(answer).toMatchObject({ status: 200, body: { bucket: 'day', start: 100, end: 200, group_by: [] } });
  });
});

describe('GET /admin/v1/usage', () => {
  it('refuses a malformed key id, and a grouping it does not know', async () => {
    expect(await get('/admin/v1/usage?start=1&key_id=key_short', ADMIN_TOKEN)).toEqual(
      refused('key_id', "'key_id' must be a key id (key_ and 16 letters or digits)."),
    );
    expect(await get('/admin/v1/usage?start=1&group_by=key,moon', ADMIN_TOKEN)).toEqual(
      refused('group_by', "'group_by' takes a comma-separated list of key, model, plan, team."),
    );
  });

  it("reads one key's usage, by key and model", async () => {
    const answer = await get(`/admin/v1/usage?start=100&end=200&group_by=key,model&key_id=${KEY_ID}`, ADMIN_TOKEN);
    expect(answer).toMatchObject({ status: 200, body: { group_by: ['key', 'model'] } });
    expect(received).toEqual([{ method: 'QueryUsage', request: { start: 100, end: 200, bucket: 'BUCKET_WIDTH_DAY', key_ids: [KEY_ID] } }]);
  });
});

describe('GET /admin/v1/requests without a request log', () => {
  it.each([
    ['?limit=0', 'limit', "'limit' must be an integer from 1 to 1000."],
    ['?limit=201', 'limit', "'limit' must be an integer from 1 to 200 (the request log is not configured)."],
    ['?limit=1001', 'limit', "'limit' must be an integer from 1 to 1000."],
    ['?limit=5&limit=6', 'limit', "'limit' must be given once."],
    ['?key_id=key_', 'key_id', "'key_id' must be a key id (key_ and 16 letters or digits)."],
  ])('refuses %s', async (query, param, message) => {
    expect(await get(`/admin/v1/requests${query}`, ADMIN_TOKEN)).toEqual(refused(param, message));
  });

  it('refuses an unknown parameter', async () => {
    expect(await get('/admin/v1/requests?since=1', ADMIN_TOKEN)).toEqual(
      refused(
        'since',
        "Unknown query parameter 'since'. Allowed: limit, key_id, start, end, team_id, model, provider, deployment, status, error_code, api, outcome, cache_status, batch_id, min_latency_ms, max_latency_ms, min_cost_usd, max_cost_usd, sort, order, cursor, format.",
        'unknown_parameter',
      ),
    );
  });

  it('lists 50 by default, and up to 200 (leading zeros allowed)', async () => {
    for (const query of ['', '?limit=200', '?limit=007', `?limit=1&key_id=${KEY_ID}`])
      expect((await get(`/admin/v1/requests${query}`, ADMIN_TOKEN)).status).toBe(200);
    expect(received.map((entry) => entry.request)).toEqual([
      { limit: 50, key_id: '' },
      { limit: 200, key_id: '' },
      { limit: 7, key_id: '' },
      { limit: 1, key_id: KEY_ID },
    ]);
  });

  it("shows what the response cache did for metering's latest requests: a hit's age and saved cost", async () => {
    recentRequests = [
      { event_id: 'e1', key_id: KEY_ID, cache_status: 'hit', cache_age_ms: 42_000, cost_pico_usd: '0', saved_cost_pico_usd: '6250000000' },
      { event_id: 'e2', key_id: KEY_ID, cache_status: 'miss', cost_pico_usd: '6250000000' },
      { event_id: 'e3', key_id: KEY_ID, cost_pico_usd: '6250000000' },
    ];
    const answer = await get('/admin/v1/requests', ADMIN_TOKEN);
    expect(answer.body.data).toMatchObject([
      { id: 'e1', cache_status: 'hit', cache_age_ms: 42_000, cost_usd: 0, saved_cost_usd: 0.00625 },
      { id: 'e2', cache_status: 'miss', cache_age_ms: null, cost_usd: 0.00625, saved_cost_usd: 0 },
      { id: 'e3', cache_status: null, cache_age_ms: null, saved_cost_usd: 0 },
    ]);
  });

  it.each(['?model=sim-mini', '?status=429', '?format=csv', '?sort=latency', '?cache_status=hit'])(
    'answers %s with a 503 that says the request log is not configured',
    async (query) => {
      const answer = await get(`/admin/v1/requests${query}`, ADMIN_TOKEN);
      expect(answer.status).toBe(503);
      expect(answer.body.error).toMatchObject({ code: 'request_log_not_configured', type: 'service_unavailable_error' });
      expect(answer.body.error.message).toContain('REQUEST_LOG_SERVICE_ADDR');
      expect(received).toEqual([]);
    },
  );

  it("answers a request's detail with the same 503", async () => {
    const answer = await get('/admin/v1/requests/0b9e2a34-1c1f-4a8e-9a52-2f2f1c1e0d11', ADMIN_TOKEN);
    expect(answer).toMatchObject({ status: 503, body: { error: { code: 'request_log_not_configured' } } });
  });

  it('answers the tool calls and a tool call with the same 503', async () => {
    for (const path of ['/admin/v1/tool-calls', '/admin/v1/tool-calls?server=web', '/admin/v1/tool-calls/0b9e2a34-1c1f-4a8e-9a52-2f2f1c1e0d11']) {
      const answer = await get(path, ADMIN_TOKEN);
      expect(answer).toMatchObject({ status: 503, body: { error: { code: 'request_log_not_configured' } } });
      expect(answer.body.error.message).toContain('to search tool calls');
    }
    expect(received).toEqual([]);
  });
});
