/**
 * The request log through the whole cluster, with the request-log service writing to a PostgreSQL
 * database of this run's own: after a known mix (chat completions whole and streamed, the
 * Responses API, the Messages API streamed, a failure, a fallback), every request is one row with
 * what its answer showed (its tokens, its id, its cost to the pico-dollar) and the request log
 * agrees with the usage API; each search filter of GET /admin/v1/requests, its paging and its
 * exports work for a viewer; and when the log's PostgreSQL is unavailable no request fails, the
 * events wait in the stream and each is logged once when it returns.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costPicoUsd, loadCatalog } from '@gateway/catalog';
import { createTestDatabase, eventually, type FakeUpstream, replayJson, startFakeUpstream, type TestDatabase, fixture } from '@gateway/testing';
import { createAdminToken, fakeModelEntry, SIM_MINI_ENTRY, stopProcess, writeCatalog } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';

const STATIC_TOKEN = `admin-${randomBytes(24).toString('hex')}`;
const KEY_VARIABLE = 'REQUEST_LOG_UPSTREAM_API_KEY';
const USER_AGENT = 'request-log-e2e/1.0';
const gateway = new ClusterFixture();
let database: TestDatabase;
let upstream: FakeUpstream;
let viewer: string;
let keyId: string;
/** The cluster's catalog, whose prices the expected costs are computed with. */
let catalog: ReturnType<typeof loadCatalog>;

// biome-ignore lint/suspicious/noExplicitAny: each test asserts the fields it reads
type Answer = any;

/** What a request sent and what its answer showed, to compare with its row. */
interface Sent {
  requestId: string;
  api: string;
  stream: boolean;
  status: number;
  model: string;
  promptTokens: number;
  completionTokens: number;
  responseId?: string;
  costUsd?: number;
  errorCode?: string;
  fallbackModels?: string[];
}
const sent: Sent[] = [];

async function call(token: string, path: string): Promise<{ status: number; json: Answer; text: string; headers: Headers }> {
  const response = await fetch(`${gateway.origin}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  let json: Answer;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text, headers: response.headers };
}

async function post(path: string, body: Record<string, unknown>, requestId: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gateway.origin}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${gateway.cluster.apiKey}`,
      'content-type': 'application/json',
      'x-request-id': requestId,
      'user-agent': USER_AGENT,
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

/** What a whole chat completion of sim-mini sent and its answer showed. */
function sentChatCompletion(requestId: string, body: Answer): Sent {
  return {
    requestId,
    api: 'chat_completions',
    stream: false,
    status: 200,
    model: 'sim-mini',
    promptTokens: body.usage.prompt_tokens,
    completionTokens: body.usage.completion_tokens,
    responseId: body.id,
    costUsd: body.gateway.cost_usd,
  };
}

/** The `data:` payloads of an SSE body, parsed (`[DONE]` left out). */
function sseData(text: string): Answer[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice(6)));
}

const hello = [{ role: 'user', content: 'Say hello to the request log' }];

beforeAll(async () => {
  database = await createTestDatabase('reqlog_e2e');
  // The primary of `fake-model` always fails with a retryable 503: a request falls back to sim-mini, or fails.
  upstream = await startFakeUpstream(replayJson(503, fixture('error-500.json')));
  const catalogPath = writeCatalog('request-log', [SIM_MINI_ENTRY, fakeModelEntry(upstream.baseUrl, KEY_VARIABLE)]);
  catalog = loadCatalog(catalogPath);
  await gateway.start({
    requestLog: { databaseUrl: database.url },
    env: {
      CATALOG_PATH: catalogPath,
      [KEY_VARIABLE]: 'sk-test-request-log',
      EDGE_ADMIN_TOKEN: STATIC_TOKEN,
      EDGE_ADMIN_TOKENS_ENABLED: 'true',
      DEPLOYMENT_HEALTH_SUBJECT: `health.v1.deployment.test-${randomBytes(4).toString('hex')}`,
      EXECUTOR_RETRY_BASE_DELAY_MS: '10',
      REQUEST_LOG_BATCH_DELAY_MS: '20',
    },
  });
  viewer = await createAdminToken(gateway.origin, STATIC_TOKEN, 'viewer', 'request-log-viewer');
}, 120_000);

afterAll(async () => {
  await gateway.stop(upstream);
  await database?.drop();
}, 60_000);

/** The log's rows of this key, once it holds `count` of them. */
async function loggedRows(count: number, timeoutMs = 30_000): Promise<Answer[]> {
  return eventually(
    async () => {
      const page = await call(viewer, `/admin/v1/requests?limit=1000`);
      return page.status === 200 && page.json.data.length >= count ? (page.json.data as Answer[]) : undefined;
    },
    `${count} requests in the request log`,
    timeoutMs,
    200,
  );
}

describe('the request log', () => {
  it('holds one row per request with what its answer showed, and agrees with the usage API to the pico-dollar', async () => {
    // Chat completions, whole.
    {
      const requestId = `rl-whole-${randomUUID()}`;
      const response = await post('/v1/chat/completions', { model: 'sim-mini', messages: hello }, requestId);
      expect(response.status).toBe(200);
      sent.push(sentChatCompletion(requestId, await response.json()));
    }
    // Chat completions, streamed with its usage.
    {
      const requestId = `rl-stream-${randomUUID()}`;
      const response = await post(
        '/v1/chat/completions',
        { model: 'sim-mini', messages: hello, stream: true, stream_options: { include_usage: true } },
        requestId,
      );
      const chunks = sseData(await response.text());
      const usage = chunks.find((chunk) => chunk.usage)?.usage;
      expect(response.status).toBe(200);
      sent.push({
        requestId,
        api: 'chat_completions',
        stream: true,
        status: 200,
        model: 'sim-mini',
        promptTokens: usage.prompt_tokens,
        completionTokens: usage.completion_tokens,
        responseId: chunks[0].id,
      });
    }
    // The Responses API, whole.
    {
      const requestId = `rl-responses-${randomUUID()}`;
      const response = await post('/v1/responses', { model: 'sim-mini', input: 'Say hello to the request log', store: false }, requestId);
      const body = (await response.json()) as Answer;
      expect(response.status).toBe(200);
      sent.push({
        requestId,
        api: 'responses',
        stream: false,
        status: 200,
        model: 'sim-mini',
        promptTokens: body.usage.input_tokens,
        completionTokens: body.usage.output_tokens,
        responseId: body.id,
        costUsd: body.gateway.cost_usd,
      });
    }
    // The Messages API, streamed.
    {
      const requestId = `rl-messages-${randomUUID()}`;
      const response = await post('/v1/messages', { model: 'sim-mini', max_tokens: 64, messages: hello, stream: true }, requestId, {
        'anthropic-version': '2023-06-01',
      });
      const events = sseData(await response.text());
      expect(response.status).toBe(200);
      const start = events.find((event) => event.type === 'message_start');
      const delta = events.filter((event) => event.type === 'message_delta').at(-1);
      sent.push({
        requestId,
        api: 'messages',
        stream: true,
        status: 200,
        model: 'sim-mini',
        // The final usage (message_delta's) is the model's count; message_start's input is an estimate.
        promptTokens: delta.usage.input_tokens ?? start.message.usage.input_tokens,
        completionTokens: delta.usage.output_tokens,
        responseId: start.message.id,
        costUsd: delta.gateway?.cost_usd,
      });
    }
    // A fallback: the primary fails, sim-mini answers.
    {
      const requestId = `rl-fallback-${randomUUID()}`;
      const response = await post('/v1/chat/completions', { model: 'fake-model', messages: hello, fallbacks: ['sim-mini'] }, requestId);
      const body = (await response.json()) as Answer;
      expect(response.status).toBe(200);
      expect(body.gateway.routed_to).toBe('sim-mini');
      sent.push({ ...sentChatCompletion(requestId, body), fallbackModels: ['fake-model'] });
    }
    // A failure: the primary fails and nothing may answer instead.
    {
      const requestId = `rl-failure-${randomUUID()}`;
      const response = await post('/v1/chat/completions', { model: 'fake-model', messages: hello, fallbacks: false }, requestId);
      const body = (await response.json()) as Answer;
      expect([502, 503]).toContain(response.status);
      sent.push({
        requestId,
        api: 'chat_completions',
        stream: false,
        status: response.status,
        model: 'fake-model',
        promptTokens: 0,
        completionTokens: 0,
        errorCode: body.error.code,
      });
    }

    const rows = await loggedRows(sent.length);
    expect(rows.length).toBe(sent.length);
    keyId = rows[0].key_id;
    for (const request of sent) {
      const row = rows.find((entry) => entry.request_id === request.requestId);
      expect(row, request.requestId).toBeDefined();
      const cost = costPicoUsd(catalog.byId.get(request.model)!.pricing, { prompt_tokens: request.promptTokens, completion_tokens: request.completionTokens });
      expect(row).toMatchObject({
        api: request.api,
        stream: request.stream,
        http_status: request.status,
        model: request.model,
        prompt_tokens: request.promptTokens,
        completion_tokens: request.completionTokens,
        cost_pico_usd: cost.toString(),
        user_agent: USER_AGENT,
        outcome: request.errorCode ? 'failed' : 'completed',
        error_code: request.errorCode ?? null,
        fallback_models: request.fallbackModels ?? [],
        fallbacks: request.fallbackModels?.length ?? 0,
        // sim-mini answers in the executor; a request no model answered names no deployment.
        deployment_id: request.errorCode ? null : '0:in-process',
      });
      expect(row.response_id, request.requestId).toBe(request.responseId ?? null);
      if (request.costUsd !== undefined) expect(row.cost_usd).toBe(request.costUsd);
      if (request.stream && request.api === 'chat_completions') expect(row.time_to_first_token_ms).toBeGreaterThanOrEqual(0);
    }

    // The usage API meters the same requests at the same cost.
    const start = Math.floor(Date.now() / 1000) - 3600;
    const usage = await eventually(
      async () => {
        const answer = await call(viewer, `/admin/v1/usage?start=${start}&key_id=${keyId}`);
        return answer.json?.totals?.requests === sent.length ? answer.json : undefined;
      },
      'metering to meter every request',
      30_000,
      200,
    );
    const logged = rows.reduce((total, row) => total + BigInt(row.cost_pico_usd), 0n);
    expect(usage.totals.cost_pico_usd).toBe(logged.toString());
    expect(usage.totals.prompt_tokens).toBe(rows.reduce((total, row) => total + row.prompt_tokens, 0));
    expect(usage.totals.errors).toBe(1);
  }, 120_000);

  it('finds each request by its filters, pages with the cursor, reads one by its request id and exports CSV and JSONL', async () => {
    const failure = sent.find((request) => request.errorCode)!;
    const ids = async (query: string) => ((await call(viewer, `/admin/v1/requests?${query}`)).json.data as Answer[]).map((row) => row.request_id);
    expect(await ids(`status=${failure.status}`)).toEqual([failure.requestId]);
    expect(await ids(`error_code=${failure.errorCode}`)).toEqual([failure.requestId]);
    expect(await ids('outcome=failed')).toEqual([failure.requestId]);
    expect(await ids('api=messages')).toEqual(sent.filter((request) => request.api === 'messages').map((request) => request.requestId));
    expect((await ids('api=chat_completions')).length).toBe(4);
    expect((await ids('model=fake-model')).sort()).toEqual(
      sent
        .filter((request) => request.requestId.startsWith('rl-fa'))
        .map((request) => request.requestId)
        .sort(),
    );
    expect((await ids(`key_id=${keyId}`)).length).toBe(sent.length);
    expect(await ids('key_id=key_0000000000000000')).toEqual([]);
    expect((await ids('provider=simulated')).length).toBe(sent.length - 1);
    expect((await ids('deployment=0:in-process')).length).toBe(sent.length - 1);
    expect(await ids(`deployment=0:${new URL(upstream.baseUrl).origin}`)).toEqual([]);
    expect((await ids('min_cost_usd=0.000000000001')).length).toBe(sent.length - 1);
    expect(await ids('max_cost_usd=0')).toEqual([failure.requestId]);
    const byLatency = (await call(viewer, '/admin/v1/requests?sort=latency&order=desc')).json.data as Answer[];
    expect(byLatency.map((row) => row.latency_ms)).toEqual([...byLatency.map((row) => row.latency_ms)].sort((a, b) => b - a));
    const future = Math.floor(Date.now() / 1000) + 3600;
    expect(await ids(`start=${future}`)).toEqual([]);

    // Two at a time, newest first: every request once.
    const paged: string[] = [];
    let cursor = '';
    do {
      const page = await call(viewer, `/admin/v1/requests?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      paged.push(...page.json.data.map((row: Answer) => row.request_id));
      cursor = page.json.next_cursor ?? '';
    } while (cursor);
    expect(paged).toEqual(await ids(''));
    expect(new Set(paged).size).toBe(sent.length);

    const one = await call(viewer, `/admin/v1/requests/${failure.requestId}`);
    expect(one.status).toBe(200);
    expect(one.json).toMatchObject({ request_id: failure.requestId, error_code: failure.errorCode, http_status: failure.status });
    const byId = await call(viewer, `/admin/v1/requests/${one.json.id}`);
    expect(byId.json.request_id).toBe(failure.requestId);
    const missing = await call(viewer, `/admin/v1/requests/${randomUUID()}`);
    expect(missing.status).toBe(404);
    expect(missing.json.error).toHaveProperty('message');

    const csv = await call(viewer, '/admin/v1/requests?format=csv&api=chat_completions');
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toContain('text/csv');
    expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="requests-.*\.csv"$/);
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]).toMatch(/^id,created_at,request_id,/);
    expect(lines.length).toBe(1 + 4);
    const jsonl = await call(viewer, '/admin/v1/requests?format=jsonl');
    const exported = jsonl.text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(exported.map((row) => row.request_id).sort()).toEqual(sent.map((request) => request.requestId).sort());

    const refused = await call(viewer, '/admin/v1/requests?sort=tokens');
    expect(refused).toMatchObject({ status: 400, json: { error: { param: 'sort' } } });
  }, 60_000);

  it("keeps every request answered while the log's PostgreSQL is unavailable, and logs each once when it returns", async () => {
    await database.setReachable(false);
    const during: string[] = [];
    try {
      for (let index = 0; index < 5; index += 1) {
        const requestId = `rl-outage-${index}-${randomUUID()}`;
        const response = await post('/v1/chat/completions', { model: 'sim-mini', messages: hello }, requestId);
        expect(response.status).toBe(200);
        await response.text();
        during.push(requestId);
      }
      // The search answers a clear 503 meanwhile, never a hang or a 500.
      const search = await call(viewer, '/admin/v1/requests');
      expect(search.status).toBe(503);
      expect(search.json.error).toHaveProperty('message');
    } finally {
      await database.setReachable(true);
    }
    const rows = await loggedRows(sent.length + during.length, 60_000);
    const logged = rows.map((row) => row.request_id).filter((requestId: string) => requestId.startsWith('rl-outage-'));
    expect(logged.sort()).toEqual([...during].sort());
  }, 120_000);

  it('loses and doubles nothing when the request-log service is killed while it writes', async () => {
    const before = (await loggedRows(0)).length;
    const burst = Array.from({ length: 30 }, (_, index) => `rl-killed-${index}-${randomUUID()}`);
    const answers = burst.map((requestId) =>
      post('/v1/chat/completions', { model: 'sim-mini', messages: hello }, requestId).then((response) => response.text()),
    );
    // Killed as the burst's events arrive: some batches written, some not, some not acknowledged.
    await eventually(async () => (await call(viewer, '/admin/v1/requests?limit=1000')).json.data.length > before, 'the first rows of the burst', 30_000, 20);
    await stopProcess(gateway.cluster.processes['request-log'], 'SIGKILL');
    await Promise.all(answers);
    gateway.cluster.restart('request-log');
    const rows = await loggedRows(before + burst.length, 60_000);
    const logged = rows.map((row) => row.request_id as string).filter((requestId) => requestId.startsWith('rl-killed-'));
    expect(logged.sort()).toEqual([...burst].sort());
    expect(rows.length).toBe(before + burst.length);
  }, 120_000);

  it("logs the requests a key's rate limit refused, which the usage API never meters", async () => {
    const created = await fetch(`${gateway.origin}/admin/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${STATIC_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'pro', name: 'request-log-limited', limits: { requests_per_minute: 1 } }),
    });
    const key = (await created.json()) as { id: string; secret: string };
    const statuses: number[] = [];
    const refusedIds: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const requestId = `rl-limited-${index}-${randomUUID()}`;
      const response = await fetch(`${gateway.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json', 'x-request-id': requestId, 'user-agent': USER_AGENT },
        body: JSON.stringify({ model: 'sim-mini', messages: hello }),
      });
      statuses.push(response.status);
      if (response.status === 429) refusedIds.push(requestId);
      await response.text();
    }
    expect(statuses).toEqual([200, 429, 429]);
    const rows = await eventually(
      async () => {
        const page = await call(viewer, `/admin/v1/requests?key_id=${key.id}&status=429`);
        return page.json?.data?.length === 2 ? (page.json.data as Answer[]) : undefined;
      },
      "the key's two refusals in the request log",
      30_000,
      200,
    );
    expect(rows.map((row) => row.request_id).sort()).toEqual(refusedIds.sort());
    expect(rows[0]).toMatchObject({
      outcome: 'refused',
      http_status: 429,
      error_code: 'rate_limit_exceeded',
      cost_pico_usd: '0',
      requested_model: 'sim-mini',
      user_agent: USER_AGENT,
    });
    expect((await call(viewer, `/admin/v1/requests?key_id=${key.id}&outcome=completed`)).json.data.length).toBe(1);
    // Metering counts the one request that reached a model.
    const start = Math.floor(Date.now() / 1000) - 3600;
    const usage = await eventually(
      async () => (await call(viewer, `/admin/v1/usage?start=${start}&key_id=${key.id}`)).json?.totals,
      "the key's usage",
      30_000,
      200,
    );
    expect(usage.requests).toBe(1);
  }, 60_000);

  it('logs the requests of a known key refused before reaching a model (a body its API refuses, a model that does not exist), and none of an unknown key', async () => {
    const created = await fetch(`${gateway.origin}/admin/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${STATIC_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'pro', name: 'request-log-refused-bodies' }),
    });
    const key = (await created.json()) as { id: string; secret: string };
    const send = async (path: string, secret: string, body: string, requestId: string) => {
      const response = await fetch(`${gateway.origin}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', 'x-request-id': requestId, 'user-agent': USER_AGENT },
        body,
      });
      return { status: response.status, json: (await response.json()) as { error?: { code?: string } } };
    };
    const ids = { invalid: `rl-invalid-${randomUUID()}`, unknownModel: `rl-no-model-${randomUUID()}`, notJson: `rl-not-json-${randomUUID()}` };
    const invalid = await send('/v1/chat/completions', key.secret, JSON.stringify({ model: 'sim-mini', messages: 'not a list' }), ids.invalid);
    const unknownModel = await send('/v1/messages', key.secret, JSON.stringify({ model: 'no-such-model', max_tokens: 16, messages: hello }), ids.unknownModel);
    const notJson = await send('/v1/chat/completions', key.secret, '{"model": "sim-mini", ', ids.notJson);
    expect([invalid.status, unknownModel.status, notJson.status]).toEqual([400, 404, 400]);
    // A request without a valid key is a 401, and nobody's row.
    const stranger = await send('/v1/chat/completions', `br-${randomBytes(24).toString('hex')}`, '{"model": 1}', `rl-stranger-${randomUUID()}`);
    expect(stranger.status).toBe(401);

    const rows = await eventually(
      async () => {
        const page = await call(viewer, `/admin/v1/requests?key_id=${key.id}`);
        return page.json?.data?.length === 3 ? (page.json.data as Answer[]) : undefined;
      },
      "the key's three refused requests in the request log",
      30_000,
      200,
    );
    const byId = new Map(rows.map((row) => [row.request_id, row]));
    expect(byId.get(ids.invalid)).toMatchObject({
      outcome: 'refused',
      api: 'chat_completions',
      http_status: 400,
      error_code: invalid.json.error?.code ?? null,
      requested_model: 'sim-mini',
      cost_pico_usd: '0',
      user_agent: USER_AGENT,
    });
    expect(byId.get(ids.unknownModel)).toMatchObject({ outcome: 'refused', api: 'messages', http_status: 404, requested_model: 'no-such-model' });
    expect(byId.get(ids.notJson)).toMatchObject({ outcome: 'refused', api: 'chat_completions', http_status: 400, requested_model: '' });
    // Never metered: the usage API counts nothing for the key.
    const start = Math.floor(Date.now() / 1000) - 3600;
    expect((await call(viewer, `/admin/v1/usage?start=${start}&key_id=${key.id}`)).json?.totals?.requests ?? 0).toBe(0);
  }, 60_000);
});
