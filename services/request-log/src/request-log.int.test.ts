/**
 * The request-log service against a real PostgreSQL (a database of this run's own) and a real
 * JetStream (a stream of its own): every usage event becomes one row, priced as metering prices
 * it, exactly once whatever is delivered twice; an outage of PostgreSQL leaves the events waiting
 * in the stream and loses or doubles none; the partitions past the retention are dropped as the
 * clock moves; and the search finds, orders and pages what it holds.
 */
import { randomUUID } from 'node:crypto';
import { costPicoUsd, pricingOf } from '@gateway/catalog';
import { callUnary, GatewayError } from '@gateway/grpc';
import { encodeUsageEvent, encodeUsageEventBatch, refusedNames } from '@gateway/messaging';
import type {
  GetRequestRequest,
  GetRequestResponseOutput,
  RequestLogServiceClient,
  RequestRecordOutput,
  SearchRequestsRequest,
  SearchRequestsResponseOutput,
  UsageEvent,
} from '@gateway/proto';
import { eventually, rejectedWith, startTcpProxy, type TcpProxy, type TestDatabase } from '@gateway/testing';
import type { NatsConnection } from 'nats';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestLogServer } from './app.js';
import { DAY_MS, dayOf, listPartitions, partitionName, SEARCHED_COLUMNS_STATISTICS } from './partitions.js';
import { createTestRequestLogDatabase, startTestRequestLog, type TestRequestLog, type TestRequestLogDatabase } from './testing/request-log-service.js';
import { testRequestLogSetting } from './testing/request-log-setting.js';

const setting = testRequestLogSetting('rl');
const { id, names, clock, catalog, registry } = setting;
const KEY_A = 'key_AAAAAAAAAAAAAAAA';
const KEY_B = 'key_BBBBBBBBBBBBBBBB';
const TEAM = 'team_TTTTTTTTTTTTTTTT';

let reqlogDatabase: TestRequestLogDatabase;
let database: TestDatabase;
let pool: pg.Pool;
let proxy: TcpProxy;
let proxyPort = 0;
let nc: NatsConnection;
let service: TestRequestLog;
let server: RequestLogServer;
let client: RequestLogServiceClient;
/** Whether PostgreSQL's answers reach the service (its statements always reach PostgreSQL). */
let answersPass = true;
let postgresPort = 5432;

/** Waits for `call` to fail, and checks that it failed as the service's refusal with this reason. */
async function expectRefusal(call: Promise<unknown>, reason: string): Promise<void> {
  expect((await rejectedWith(GatewayError, call)).reason).toBe(reason);
}

/** A usage event as an edge sends it, received `agoMs` before now. */
function event(fields: Partial<UsageEvent> & { agoMs?: number } = {}): UsageEvent {
  const { agoMs = 0, ...rest } = fields;
  return {
    event_id: randomUUID(),
    request_id: `req-${randomUUID()}`,
    key_id: KEY_A,
    model_id: 'sim-mini',
    requested_model: 'sim-mini',
    provider: 'simulated',
    deployment_id: '0:in-process',
    usage: { prompt_tokens: 1_000, completion_tokens: 200, total_tokens: 1_200, cached_tokens: 100, reasoning_tokens: 50, cache_write_tokens: 0 },
    received_at_ms: Date.now() - agoMs,
    latency_ms: 120,
    stream: false,
    outcome: 'OUTCOME_COMPLETED',
    operation: 'chat',
    api: 'chat_completions',
    http_status: 200,
    user_agent: 'test-agent/1.0',
    ...rest,
  };
}

async function publish(...events: UsageEvent[]): Promise<void> {
  const js = nc.jetstream();
  if (events.length === 1) await js.publish(names.subject, encodeUsageEvent(events[0]!), { msgID: events[0]!.event_id! });
  else await js.publish(names.subject, encodeUsageEventBatch(events), { msgID: `batch-${randomUUID()}` });
}

async function rowsOf(eventIds: string[]): Promise<Array<Record<string, unknown>>> {
  const { rows } = await pool.query('SELECT * FROM request_log WHERE event_id = ANY($1) ORDER BY received_at', [eventIds]);
  return rows;
}

function search(request: SearchRequestsRequest): Promise<SearchRequestsResponseOutput> {
  return callUnary<SearchRequestsRequest, SearchRequestsResponseOutput>(client, client.SearchRequests, request, { deadlineMs: 10_000 });
}

async function counter(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((entry) => entry.name === name);
  const value = metric?.values.find((entry) => Object.entries(labels).every(([label, wanted]) => entry.labels[label] === wanted));
  return Number(value?.value ?? 0);
}

beforeAll(async () => {
  reqlogDatabase = await createTestRequestLogDatabase(3);
  ({ database, pool } = reqlogDatabase);
  const target = new URL(database.url);
  // The service reaches PostgreSQL through a proxy the tests can cut.
  postgresPort = Number(target.port || 5432);
  proxy = await startTcpProxy(0, target.hostname, postgresPort, { passFromTarget: () => answersPass });
  proxyPort = proxy.port;
  const proxied = new URL(database.url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxyPort);
  const servicePool = new pg.Pool({ connectionString: proxied.toString(), max: 4, connectionTimeoutMillis: 2_000 });
  servicePool.on('error', () => undefined);
  service = await startTestRequestLog({ ...setting.dependencies, pool: servicePool, aheadDays: 2 });
  ({ server, nc, client } = service);
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await proxy?.close();
  await reqlogDatabase?.drop();
}, 30_000);

describe('request log', () => {
  it('writes one row per request with its fields and its cost to the pico-dollar, however often it is delivered', async () => {
    const whole = event({ team_id: TEAM, response_id: 'chatcmpl-1', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    const streamed = event({ stream: true, time_to_first_token_ms: 35, api: 'responses', model_id: 'sim-standard', requested_model: 'auto' });
    const failed = event({
      outcome: 'OUTCOME_FAILED',
      error_code: 'upstream_error',
      http_status: 502,
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      api: 'messages',
    });
    const fellBack = event({ fallback_attempts: 1, fallback_models: ['sim-pro'], model_id: 'sim-standard', requested_model: 'sim-pro' });
    await publish(whole);
    await publish(streamed, failed, fellBack);
    // The same event again, in a message of its own and inside another batch: still one row each.
    await publish(whole);
    await publish(failed, event({ ...streamed, event_id: streamed.event_id }));
    const ids = [whole, streamed, failed, fellBack].map((entry) => entry.event_id!);
    const rows = await eventually(
      async () => {
        const found = await rowsOf(ids);
        return found.length === 4 ? found : undefined;
      },
      'the four requests to be logged',
      15_000,
    );
    await eventually(
      async () => (await counter('gateway_request_log_rows_total', { result: 'duplicate' })) >= 2,
      'the copies to be seen as duplicates',
      15_000,
    );
    expect((await rowsOf(ids)).length).toBe(4);

    const byId = new Map(rows.map((row) => [row.event_id as string, row]));
    const wholeRow = byId.get(whole.event_id!)!;
    expect(wholeRow).toMatchObject({
      request_id: whole.request_id,
      response_id: 'chatcmpl-1',
      trace_id: '0af7651916cd43dd8448eb211c80319c',
      key_id: KEY_A,
      team_id: TEAM,
      api: 'chat_completions',
      model_id: 'sim-mini',
      provider: 'simulated',
      deployment_id: '0:in-process',
      outcome: 'completed',
      http_status: 200,
      prompt_tokens: 1_000,
      completion_tokens: 200,
      cached_tokens: 100,
      reasoning_tokens: 50,
      latency_ms: 120,
      time_to_first_token_ms: null,
      stream: false,
      user_agent: 'test-agent/1.0',
    });
    const price = (modelId: string, usage: UsageEvent['usage']) => costPicoUsd(pricingOf(catalog.byId.get(modelId)!, 'simulated'), usage ?? {}).toString();
    expect(wholeRow.cost_pico_usd).toBe(price('sim-mini', whole.usage));
    expect(BigInt(wholeRow.cost_pico_usd as string)).toBeGreaterThan(0n);
    expect(byId.get(streamed.event_id!)).toMatchObject({
      stream: true,
      time_to_first_token_ms: 35,
      api: 'responses',
      requested_model: 'auto',
      cost_pico_usd: price('sim-standard', streamed.usage),
    });
    expect(byId.get(failed.event_id!)).toMatchObject({
      outcome: 'failed',
      error_code: 'upstream_error',
      http_status: 502,
      api: 'messages',
      cost_pico_usd: '0',
    });
    expect(byId.get(fellBack.event_id!)).toMatchObject({
      fallback_attempts: 1,
      fallback_models: ['sim-pro'],
      model_id: 'sim-standard',
      requested_model: 'sim-pro',
    });
  }, 30_000);

  it('keeps requests waiting in the stream while PostgreSQL is unreachable and logs each once when it returns', async () => {
    const errorsBefore = await counter('gateway_request_log_write_errors_total');
    await database.setReachable(false);
    const during = Array.from({ length: 12 }, (_, index) => event({ key_id: KEY_B, latency_ms: 1_000 + index }));
    try {
      await publish(...during.slice(0, 6));
      for (const single of during.slice(6)) await publish(single);
      await eventually(async () => (await counter('gateway_request_log_write_errors_total')) > errorsBefore, 'a write to fail', 15_000);
      const manager = await nc.jetstreamManager();
      const info = await manager.consumers.info(names.stream, setting.durableName);
      expect(info.num_pending + info.num_ack_pending).toBeGreaterThan(0);
    } finally {
      await database.setReachable(true);
    }
    const ids = during.map((entry) => entry.event_id!);
    await eventually(async () => (await rowsOf(ids)).length === 12, 'every request of the outage to be logged', 30_000);
    expect((await rowsOf(ids)).length).toBe(12);
  }, 60_000);

  it('writes an event whose commit was never confirmed once, when it is delivered again', async () => {
    // PostgreSQL's answers stop reaching the service: the INSERT commits, the service never
    // hears it, and the connection is then cut. The messages were not acknowledged; delivered
    // again, their rows are not doubled.
    answersPass = false;
    const cut = [event({ key_id: KEY_B }), event({ key_id: KEY_B })];
    const ids = cut.map((entry) => entry.event_id!);
    try {
      await publish(...cut);
      await eventually(async () => (await rowsOf(ids)).length === 2, 'the batch to commit unseen', 15_000);
      await proxy.close();
    } finally {
      answersPass = true;
    }
    proxy = await startTcpProxy(proxyPort, '127.0.0.1', postgresPort, { passFromTarget: () => answersPass });
    await eventually(
      async () => {
        const info = await (await nc.jetstreamManager()).consumers.info(names.stream, setting.durableName);
        return info.num_pending === 0 && info.num_ack_pending === 0;
      },
      'the redelivered messages to be acknowledged',
      30_000,
    );
    expect((await rowsOf(ids)).length).toBe(2);
  }, 60_000);

  it('logs the requests refused before a model from their own stream, never the usage stream', async () => {
    const refused = event({
      outcome: 'OUTCOME_REFUSED',
      http_status: 429,
      error_code: 'rate_limit_exceeded',
      model_id: '',
      provider: '',
      deployment_id: '',
      usage: {},
    });
    await nc.jetstream().publish(refusedNames(names.stream).subject, encodeUsageEvent(refused), { msgID: refused.event_id! });
    const [row] = await eventually(
      async () => {
        const found = await rowsOf([refused.event_id!]);
        return found.length === 1 ? found : undefined;
      },
      'the refusal to be logged',
      15_000,
    );
    expect(row).toMatchObject({
      outcome: 'refused',
      http_status: 429,
      error_code: 'rate_limit_exceeded',
      cost_pico_usd: '0',
      model_id: '',
      requested_model: 'sim-mini',
    });
    const info = await (await nc.jetstreamManager()).streams.info(names.stream);
    expect(info.config.subjects).not.toContain(refusedNames(names.stream).subject);
  }, 30_000);

  it('finds requests by each filter, orders them by time, latency or cost, and pages without gaps or repeats', async () => {
    const base = Date.now() - 3_600_000;
    const set = [
      event({
        key_id: KEY_A,
        team_id: TEAM,
        latency_ms: 300,
        received_at_ms: base + 1_000,
        provider: 'simulated',
        deployment_id: '1:https://api.openai.com',
        api: 'chat_completions',
      }),
      event({ key_id: KEY_A, latency_ms: 100, received_at_ms: base + 2_000, model_id: 'sim-pro', requested_model: 'sim-pro', api: 'responses' }),
      event({
        key_id: KEY_B,
        latency_ms: 900,
        received_at_ms: base + 3_000,
        outcome: 'OUTCOME_FAILED',
        error_code: 'upstream_timeout',
        http_status: 504,
        api: 'messages',
      }),
      event({
        key_id: KEY_B,
        team_id: TEAM,
        latency_ms: 500,
        received_at_ms: base + 4_000,
        api: 'embeddings',
        model_id: 'sim-embedding',
        requested_model: 'sim-embedding',
      }),
      event({ key_id: KEY_A, latency_ms: 700, received_at_ms: base + 5_000, usage: { prompt_tokens: 90_000, completion_tokens: 9_000, total_tokens: 99_000 } }),
    ];
    await publish(...set);
    const ids = set.map((entry) => entry.event_id!);
    await eventually(async () => (await rowsOf(ids)).length === 5, 'the set to be logged', 15_000);
    const range = { start_ms: base, end_ms: base + 10_000 };
    const found = async (request: SearchRequestsRequest) => (await search({ ...range, ...request })).requests.map((entry) => ids.indexOf(entry.event_id!));

    expect(await found({})).toEqual([4, 3, 2, 1, 0]);
    expect(await found({ ascending: true })).toEqual([0, 1, 2, 3, 4]);
    expect(await found({ key_id: KEY_B })).toEqual([3, 2]);
    expect(await found({ team_id: TEAM })).toEqual([3, 0]);
    expect(await found({ model: 'sim-pro' })).toEqual([1]);
    expect(await found({ provider: 'simulated' })).toEqual([4, 3, 2, 1, 0]);
    expect(await found({ provider: 'openai' })).toEqual([]);
    expect(await found({ deployment_id: '1:https://api.openai.com' })).toEqual([0]);
    expect(await found({ deployment_id: '0:in-process' })).toEqual([4, 3, 2, 1]);
    expect(await found({ http_status: 504 })).toEqual([2]);
    expect(await found({ error_code: 'upstream_timeout' })).toEqual([2]);
    expect(await found({ outcome: 'failed' })).toEqual([2]);
    expect(await found({ api: 'embeddings' })).toEqual([3]);
    expect(await found({ min_latency_ms: 300, max_latency_ms: 700 })).toEqual([4, 3, 0]);
    expect(await found({ start_ms: base + 2_000, end_ms: base + 4_000 })).toEqual([2, 1]);
    expect(await found({ sort: 'SORT_FIELD_LATENCY' })).toEqual([2, 4, 3, 0, 1]);
    expect(await found({ sort: 'SORT_FIELD_LATENCY', ascending: true })).toEqual([1, 0, 3, 4, 2]);
    const costs = (await search({ ...range, sort: 'SORT_FIELD_COST' })).requests.map((entry) => BigInt(entry.cost_pico_usd!));
    expect(costs).toEqual([...costs].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0)));
    expect(await found({ sort: 'SORT_FIELD_COST' })).toHaveProperty('0', 4);
    const dearest = BigInt((await search({ ...range, sort: 'SORT_FIELD_COST', page_size: 1 })).requests[0]!.cost_pico_usd!);
    expect(await found({ min_cost_pico_usd: Number(dearest) })).toEqual([4]);
    expect(await found({ max_cost_pico_usd: Number(dearest) - 1 })).toEqual([3, 2, 1, 0]);

    for (const sort of ['SORT_FIELD_TIME', 'SORT_FIELD_LATENCY', 'SORT_FIELD_COST'] as const) {
      const whole = await found({ sort });
      const paged: number[] = [];
      let cursor = '';
      let pages = 0;
      do {
        const page = await search({ ...range, sort, page_size: 2, cursor });
        paged.push(...page.requests.map((entry) => ids.indexOf(entry.event_id!)));
        cursor = page.next_cursor ?? '';
        pages += 1;
      } while (cursor);
      expect({ sort, paged, pages }).toEqual({ sort, paged: whole, pages: 3 });
    }

    // A cursor of one order is refused by another.
    const timeCursor = (await search({ ...range, page_size: 2 })).next_cursor!;
    await expectRefusal(search({ ...range, sort: 'SORT_FIELD_COST', cursor: timeCursor }), 'invalid_request');
  }, 30_000);

  it('logs what the response cache did: a hit at its hit cost with what it saved, found by its cache status', async () => {
    const base = Date.now() - 2 * 3_600_000;
    const hit = event({
      received_at_ms: base + 1_000,
      cache: { status: 'hit', age_ms: 42_000, saved_cost_pico_usd: 1_250_000, cost_pico_usd: 125_000, count_tokens: false },
    });
    const miss = event({ received_at_ms: base + 2_000, cache: { status: 'miss' } });
    const uncached = event({ received_at_ms: base + 3_000 });
    await publish(hit, miss, uncached);
    const ids = [hit, miss, uncached].map((entry) => entry.event_id!);
    await eventually(async () => (await rowsOf(ids)).length === 3, 'the three requests to be logged', 15_000);
    const range = { start_ms: base, end_ms: base + 10_000 };
    const found = (await search(range)).requests;
    const byId = new Map(found.map((entry) => [entry.event_id!, entry]));
    // The hit keeps the stored answer's tokens, and costs what the edge charged for it.
    expect(byId.get(hit.event_id!)).toMatchObject({ cache_status: 'hit', saved_cost_pico_usd: '1250000', cost_pico_usd: '125000', prompt_tokens: 1_000 });
    expect(byId.get(miss.event_id!)).toMatchObject({ cache_status: 'miss', saved_cost_pico_usd: '0' });
    expect(BigInt(byId.get(miss.event_id!)!.cost_pico_usd!)).toBeGreaterThan(0n);
    expect(byId.get(uncached.event_id!)).toMatchObject({ cache_status: '', saved_cost_pico_usd: '0' });
    const withStatus = async (cache_status: string) => (await search({ ...range, cache_status })).requests.map((entry) => ids.indexOf(entry.event_id!));
    expect(await withStatus('hit')).toEqual([0]);
    expect(await withStatus('miss')).toEqual([1]);
    expect(await withStatus('skip')).toEqual([]);
    expect((await search(range)).requests.map((entry) => ids.indexOf(entry.event_id!))).toEqual([2, 1, 0]);
  }, 30_000);

  it("logs the batch a request was a line of, found by the batch's id", async () => {
    const base = Date.now() - 3 * 3_600_000;
    const batchId = `batch_${id.replace(/[^A-Za-z0-9]/g, '')}`;
    const lines = [event({ received_at_ms: base + 1_000, batch_id: batchId }), event({ received_at_ms: base + 2_000, batch_id: batchId })];
    const online = event({ received_at_ms: base + 3_000 });
    await publish(...lines, online);
    const ids = [...lines, online].map((entry) => entry.event_id!);
    await eventually(async () => (await rowsOf(ids)).length === 3, 'the three requests to be logged', 15_000);
    const range = { start_ms: base, end_ms: base + 10_000 };
    expect((await search({ ...range, batch_id: batchId })).requests.map((entry) => ids.indexOf(entry.event_id!))).toEqual([1, 0]);
    const all = (await search(range)).requests;
    expect(all.map((entry) => [ids.indexOf(entry.event_id!), entry.batch_id])).toEqual([
      [2, ''],
      [1, batchId],
      [0, batchId],
    ]);
  }, 30_000);

  it('reads one request by its event id or its request id, and says when it has none', async () => {
    const guardrails = [{ policy: 'cards', check: 'card', point: 'input', action: 'mask', enforced: true, entity: 'card', error: '' }];
    const one = event({ request_id: `req-${id}`, guardrails });
    await publish(one);
    await eventually(async () => (await rowsOf([one.event_id!])).length === 1, 'the request to be logged', 15_000);
    const get = (requestId: string) =>
      callUnary<GetRequestRequest, GetRequestResponseOutput>(client, client.GetRequest, { id: requestId }, { deadlineMs: 5_000 });
    const byEvent: RequestRecordOutput = (await get(one.event_id!)).request!;
    expect(byEvent).toMatchObject({ event_id: one.event_id, request_id: `req-${id}`, key_id: KEY_A, user_agent: 'test-agent/1.0' });
    // The guardrail decisions of the request, as its usage event carried them.
    expect(byEvent.guardrails).toEqual(guardrails);
    expect((await get(`req-${id}`)).request?.event_id).toBe(one.event_id);
    await expectRefusal(get(randomUUID()), 'not_found');
  }, 30_000);

  it("counts its reads by result, what the search alerts read: answered, refused (the caller's), failed (PostgreSQL unreachable)", async () => {
    const reads = async (result: string) => {
      const histogram = (await registry.getMetricsAsJSON()).find((entry) => entry.name === 'gateway_request_log_query_duration_seconds');
      return Number(
        histogram?.values.find((entry) => (entry as { metricName?: string }).metricName?.endsWith('_count') && entry.labels.result === result)?.value ??
          Number.NaN,
      );
    };
    const before = { ok: await reads('ok'), refused: await reads('refused'), error: await reads('error') };
    expect(Object.values(before).every(Number.isFinite)).toBe(true);
    await search({ page_size: 1 });
    await expectRefusal(search({ cursor: 'not-a-cursor' }), 'invalid_request');
    await database.setReachable(false);
    try {
      await expectRefusal(search({ page_size: 1 }), 'store_unavailable');
    } finally {
      await database.setReachable(true);
    }
    expect({ ok: await reads('ok'), refused: await reads('refused'), error: await reads('error') }).toEqual({
      ok: before.ok + 1,
      refused: before.refused + 1,
      error: before.error + 1,
    });
  }, 30_000);

  it('drops the partitions past the retention as the clock moves, and creates those ahead', async () => {
    const old = event({ agoMs: 10 * DAY_MS });
    await publish(old);
    await eventually(async () => (await rowsOf([old.event_id!])).length === 1, 'a request of ten days ago to be logged', 15_000);
    const oldDay = dayOf(Number(old.received_at_ms));
    expect(await listPartitions(pool)).toContain(oldDay);

    clock.offsetMs = 25 * DAY_MS;
    try {
      const { dropped, created } = await server.maintain();
      expect(dropped).toContain(oldDay);
      expect(created).toContain(dayOf(Date.now() + clock.offsetMs) + 2);
      // A partition created now keeps the finer statistics of latency and cost the searches' plans rest on.
      const { rows: targets } = await pool.query<{ column: string; target: number }>(
        `SELECT attname AS column, attstattarget::int AS target FROM pg_attribute
          WHERE attrelid = $1::regclass AND attname IN ('latency_ms', 'cost_pico_usd') ORDER BY attname`,
        [partitionName(dayOf(Date.now() + clock.offsetMs) + 2)],
      );
      expect(targets).toEqual([
        { column: 'cost_pico_usd', target: SEARCHED_COLUMNS_STATISTICS },
        { column: 'latency_ms', target: SEARCHED_COLUMNS_STATISTICS },
      ]);
      const partitions = await listPartitions(pool);
      expect(partitions).not.toContain(oldDay);
      expect(Math.min(...partitions)).toBeGreaterThanOrEqual(dayOf(Date.now() + clock.offsetMs - 30 * DAY_MS));
      expect(await rowsOf([old.event_id!])).toEqual([]);
      // Today's rows are within the retention: kept.
      expect((await pool.query('SELECT count(*)::int AS count FROM request_log')).rows[0].count).toBeGreaterThan(0);
      // An event of a day past the retention arriving late is not written (its partition is gone).
      const late = event({ agoMs: 10 * DAY_MS });
      await publish(late);
      await eventually(
        async () => (await counter('gateway_request_log_rows_total', { result: 'expired' })) >= 1,
        'the late event to be counted as expired',
        15_000,
      );
      expect(await rowsOf([late.event_id!])).toEqual([]);
    } finally {
      clock.offsetMs = 0;
    }
  }, 30_000);
});
