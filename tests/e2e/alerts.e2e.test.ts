/**
 * The metrics behind deploy/components/alerts, moved by the faults they alert on, against a running
 * cluster: usage events dropped by an edge that cannot reach NATS, metering's lag while it is
 * stopped (and back to 0 once it consumes), a poison message metering can never meter, metering's
 * Redis made unreachable, a deployment's
 * breaker held open by a failing upstream, 5xx answers, and streams slower to their first token
 * than the SLO's 2.5 s. Also: every metric the alerting rules read is exported by some service.
 * The rules' thresholds and windows themselves are unit-tested by promtool (the *.test.yaml beside them).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { connect } from 'nats';
import { encodeUsageEvent, usageNames } from '@gateway/messaging';
import {
  createTestDatabase,
  eventually,
  freePort,
  natsServers,
  type FakeUpstream,
  replayJson,
  replaySse,
  startFakeUpstream,
  startTcpProxy,
  type TcpProxy,
  type TestDatabase,
  fixture,
} from '@gateway/testing';
import { fakeModelEntry, metric, SIM_MINI_ENTRY, startCluster, startSecondEdge, stopProcess, writeCatalog, type Cluster } from './cluster.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KEY_VARIABLE = 'ALERTS_UPSTREAM_API_KEY';
/** The SLO's threshold: the `le` bucket the time-to-first-token burn-rate rules read. */
const TTFT_SLO_SECONDS = '2.5';
const ADMIN_TOKEN = 'alerts-e2e-admin-token-0123456789abcdef';

let cluster: Cluster;
const upstreams: FakeUpstream[] = [];
const cleanups: Array<() => Promise<unknown>> = [];

const metricsUrl = (service: 'edge' | 'auth' | 'router' | 'executor' | 'metering' | 'requestLog' | 'mcp' | 'guard' | 'cache' | 'batch') =>
  `http://127.0.0.1:${cluster.ports[`${service}Metrics`]}/metrics`;
/** The request log's own database: the cluster runs every service the alerting rules read, the optional ones included. */
let database: TestDatabase | undefined;

const STORE_ERRORS = 'gateway_metering_store_errors_total';

function complete(model: string, options: { stream?: boolean; baseUrl?: string } = {}): Promise<Response> {
  return fetch(`${options.baseUrl ?? cluster.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: options.stream === true, messages: [{ role: 'user', content: 'hello' }] }),
    signal: AbortSignal.timeout(20_000),
  });
}

/** Sends a completion and reads its whole body; resolves its status. */
async function status(model: string, options: { stream?: boolean; baseUrl?: string } = {}): Promise<number> {
  const response = await complete(model, options);
  await response.arrayBuffer();
  return response.status;
}

/** The API's 5xx answers so far, as the edge counts them for the 5xx-ratio alert. */
async function fiveHundreds(): Promise<number> {
  return (await fetch(metricsUrl('edge')).then((response) => response.text()))
    .split('\n')
    .filter((line) => line.startsWith('gateway_http_requests_total{') && line.includes('route="/v1/chat/completions"') && /status="5\d\d"/.test(line))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

beforeAll(async () => {
  const broken = await startFakeUpstream(replayJson(500, fixture('error-500.json')));
  // The first chunk after 3 s: over the SLO's 2.5 s.
  const slow = await startFakeUpstream(async (request, response) => {
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await replaySse(fixture('stream-text.sse'))(request, response);
  });
  upstreams.push(broken, slow);
  const catalogPath = writeCatalog('alerts', [
    SIM_MINI_ENTRY,
    fakeModelEntry(broken.baseUrl, KEY_VARIABLE, 'broken-model', []),
    fakeModelEntry(slow.baseUrl, KEY_VARIABLE, 'slow-model', []),
  ]);
  database = await createTestDatabase('alerts');
  cluster = await startCluster({
    env: { CATALOG_PATH: catalogPath, [KEY_VARIABLE]: 'sk-test', EDGE_ADMIN_TOKEN: ADMIN_TOKEN },
    requestLog: { databaseUrl: database.url },
    mcp: true,
    guard: true,
    cache: true,
    batch: true,
  });
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await cluster?.stop();
  await database?.drop();
  await Promise.all(upstreams.map((upstream) => upstream.close()));
});

describe('the alerts', () => {
  it('usage dropped: an edge that cannot reach NATS holds events up to its bound, then counts each one dropped', async () => {
    const edgeMetricsPort = await freePort();
    const unreachable = await freePort();
    const edge = await startSecondEdge(cluster, {
      NATS_URL: `nats://127.0.0.1:${unreachable}`,
      EDGE_USAGE_QUEUE_MAX_EVENTS: '2',
      EDGE_METRICS_PORT: String(edgeMetricsPort),
    });
    cleanups.push(() => edge.stop());
    const edgeMetrics = `http://127.0.0.1:${edgeMetricsPort}/metrics`;
    // Exported from 0 before any drop, so that increase() sees the first one.
    expect(await metric(edgeMetrics, 'gateway_usage_events_dropped_total', { reason: 'queue_full' })).toBe(0);
    for (let index = 0; index < 5; index += 1) expect(await status('sim-mini', { baseUrl: edge.baseUrl })).toBe(200);
    await eventually(
      async () => (await metric(edgeMetrics, 'gateway_usage_events_dropped_total', { reason: 'queue_full' })) === 3 || undefined,
      'three events dropped (queue_full)',
      5_000,
      100,
    );
    expect(await metric(edgeMetrics, 'gateway_usage_events_held')).toBe(2);
    expect(await metric(edgeMetrics, 'gateway_usage_events_queued_total')).toBe(2);
    await edge.stop();
  });

  it('metering lag: events sent while metering is stopped are pending, with their age, at its restart; metered, both go back to 0', async () => {
    const meteringMetrics = metricsUrl('metering');
    await eventually(
      async () => (await metric(meteringMetrics, 'gateway_metering_consumer_pending_messages').catch(() => -1)) === 0 || undefined,
      'no lag',
      15_000,
      200,
    );
    await stopProcess(cluster.processes.metering);
    const stoppedAt = Date.now();
    for (let index = 0; index < 5; index += 1) expect(await status('sim-mini')).toBe(200);
    // Acknowledged by the stream: nothing is held at the edge, it is all in JetStream, unmetered.
    await eventually(
      async () => (await metric(metricsUrl('edge'), 'gateway_usage_events_held')) === 0 || undefined,
      'the events to reach the stream',
      5_000,
      100,
    );
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    cluster.restart('metering');
    // Metering reads its lag before consuming: its first figures are the backlog it found. Its metrics
    // port answers from the first instant of its start-up, before that first read (the gauges absent,
    // then NaN): the reading is the one the restarted process stamped.
    const pending = await eventually(
      async () => {
        const readAt = await metric(meteringMetrics, 'gateway_metering_lag_last_read_timestamp_seconds').catch(() => 0);
        if (readAt * 1000 < stoppedAt) return undefined;
        return {
          value: await metric(meteringMetrics, 'gateway_metering_consumer_pending_messages'),
          age: await metric(meteringMetrics, 'gateway_metering_oldest_unmetered_age_seconds'),
        };
      },
      'metering to read its lag again',
      20_000,
      50,
    );
    expect(pending.value).toBeGreaterThanOrEqual(1);
    expect(pending.age).toBeGreaterThanOrEqual(2);
    expect(pending.age).toBeLessThanOrEqual((Date.now() - stoppedAt) / 1000 + 1);
    await eventually(
      async () =>
        ((await metric(meteringMetrics, 'gateway_metering_consumer_pending_messages')) === 0 &&
          (await metric(meteringMetrics, 'gateway_metering_oldest_unmetered_age_seconds')) === 0) ||
        undefined,
      'the lag to go back to 0 once metering consumed the backlog',
      15_000,
      200,
    );
  });

  it('poison messages: a message that is no usage event and an event naming no key are counted by reason, each from 0', async () => {
    const meteringMetrics = metricsUrl('metering');
    const poison = 'gateway_metering_poison_messages_total';
    expect(await metric(meteringMetrics, poison, { reason: 'undecodable' })).toBe(0);
    expect(await metric(meteringMetrics, poison, { reason: 'missing_key_id' })).toBe(0);
    const nc = await connect({ servers: natsServers(cluster.natsUrl) });
    try {
      const js = nc.jetstream();
      const { subject } = usageNames(cluster.usageStream);
      await js.publish(subject, new Uint8Array([0xff, 0xff, 0xff, 0x01]));
      await js.publish(subject, encodeUsageEvent({ event_id: `evt-poison-${Date.now()}`, model_id: 'sim-mini' }));
    } finally {
      await nc.close();
    }
    await eventually(
      async () =>
        ((await metric(meteringMetrics, poison, { reason: 'undecodable' })) === 1 &&
          (await metric(meteringMetrics, poison, { reason: 'missing_key_id' })) === 1) ||
        undefined,
      'both poison messages to be counted by reason',
      15_000,
      100,
    );
  });

  it('breaker open and 5xx: an upstream that fails every call opens its deployment, and callers get 5xx', async () => {
    const before = await fiveHundreds();
    const statuses: number[] = [];
    for (let index = 0; index < 8; index += 1) statuses.push(await status('broken-model'));
    expect(statuses.every((answer) => answer >= 500)).toBe(true);
    // The breaker opens for 5 s at first: read it at once.
    await eventually(
      async () => (await metric(metricsUrl('executor'), 'gateway_executor_deployment_open', { model: 'broken-model' })) >= 1 || undefined,
      "broken-model's deployment to be open",
      5_000,
      100,
    );
    expect((await fiveHundreds()) - before).toBe(8);
    expect(await metric(metricsUrl('edge'), 'gateway_errors_total')).toBeGreaterThanOrEqual(8);
  });

  it('time to first token: streams slower than the SLO land above its bucket', async () => {
    const labels = { gen_ai_request_model: 'slow-model' };
    const answers = await Promise.all([0, 1, 2].map(() => status('slow-model', { stream: true })));
    expect(answers).toEqual([200, 200, 200]);
    const edgeMetrics = metricsUrl('edge');
    const count = await metric(edgeMetrics, 'gen_ai_server_time_to_first_token_seconds_count', labels);
    const withinSlo = await metric(edgeMetrics, 'gen_ai_server_time_to_first_token_seconds_bucket', { ...labels, le: TTFT_SLO_SECONDS });
    expect(count).toBe(3);
    expect(withinSlo).toBe(0);
  });

  it('every metric the alerting rules read is exported by a service of the running cluster', async () => {
    // Every PrometheusRule of the component (its promtool tests, *.test.yaml, are not rules).
    const folder = join(ROOT, 'deploy/components/alerts');
    const rules = readdirSync(folder)
      .filter((name) => /\.ya?ml$/.test(name) && !/\.test\.ya?ml$/.test(name) && name !== 'kustomization.yaml')
      .map((name) => parse(readFileSync(join(folder, name), 'utf8')) as { spec: { groups: Array<{ rules: Array<{ expr: string }> }> } });
    const names = new Set(
      rules
        .flatMap((rule) => rule.spec.groups)
        .flatMap((group) => group.rules)
        .flatMap((entry) => [...entry.expr.matchAll(/(?<![a-zA-Z0-9_:])((?:gateway|gen_ai)_[a-z0-9_]+)(?![a-z0-9_:])/g)].map((match) => match[1]!)),
    );
    expect(names.size).toBeGreaterThanOrEqual(6);
    // The guard exports a check's series once a policy has it: one policy, on a model nobody calls.
    const put = await fetch(`${new URL(cluster.baseUrl).origin}/admin/v1/policies/alerts-probe`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        attachment: { models: ['alerts-unused-model'] },
        checks: [{ name: 'cards', points: ['input'], action: 'block', pii: { entities: ['card'] } }],
      }),
    });
    expect(put.status, await put.text()).toBe(200);
    await vi.waitFor(async () => expect(await fetch(metricsUrl('guard')).then((response) => response.text())).toContain('gateway_guard_checks_total{'), {
      timeout: 10_000,
      interval: 50,
    });
    const pages = await Promise.all(
      (['edge', 'auth', 'router', 'executor', 'metering', 'requestLog', 'mcp', 'guard', 'cache', 'batch'] as const).map((service) =>
        fetch(metricsUrl(service)).then((response) => response.text()),
      ),
    );
    const exported = pages.join('\n');
    const missing = [...names].filter((name) => !exported.includes(`\n${name}{`) && !exported.includes(`\n${name} `));
    expect(missing).toEqual([]);
  });

  it('every service that speaks NATS says it is connected (gateway_nats_connected), the one metric GatewayNatsUnreachable reads', async () => {
    const clients = ['edge', 'router', 'executor', 'metering', 'requestLog'] as const;
    const read = async () =>
      Object.fromEntries(await Promise.all(clients.map(async (service) => [service, await metric(metricsUrl(service), 'gateway_nats_connected')] as const)));
    // The router and the executors connect beside their start-up, not before it.
    await eventually(async () => Object.values(await read()).every((value) => value === 1) || undefined, 'every NATS client to report 1', 10_000).catch(
      () => undefined,
    );
    expect(await read()).toEqual({ edge: 1, router: 1, executor: 1, metering: 1, requestLog: 1 });
  });

  // Last: it leaves metering without Redis.
  it('metering store errors: with its Redis unreachable metering falls behind, and counts the failures', async () => {
    const redis = new URL(cluster.redisUrl);
    let proxy: TcpProxy = await startTcpProxy(0, redis.hostname, Number(redis.port || 6379));
    cleanups.push(() => proxy.close());
    await stopProcess(cluster.processes.metering);
    cluster.env.REDIS_URL = `redis://127.0.0.1:${proxy.port}`;
    cluster.restart('metering');
    const meteringMetrics = metricsUrl('metering');
    await eventually(
      async () => (await fetch(meteringMetrics.replace('/metrics', '/readyz')).catch(() => undefined))?.status === 200 || undefined,
      'metering ready',
      20_000,
      100,
    );
    const storeErrorsBefore = await metric(meteringMetrics, STORE_ERRORS);

    await proxy.close();
    for (let index = 0; index < 5; index += 1) expect(await status('sim-mini')).toBe(200);
    // Lag read every 5 s: pending at the next reading, and older at the one after.
    const first = await eventually(
      async () => {
        const age = await metric(meteringMetrics, 'gateway_metering_oldest_unmetered_age_seconds');
        return age > 0 ? { age, pending: await metric(meteringMetrics, 'gateway_metering_consumer_pending_messages') } : undefined;
      },
      'metering to report unmetered events',
      15_000,
      200,
    );
    expect(first.pending).toBeGreaterThanOrEqual(1);
    await eventually(
      async () => ((await metric(meteringMetrics, 'gateway_metering_oldest_unmetered_age_seconds')) > first.age ? true : undefined),
      'the oldest unmetered event to grow older',
      15_000,
      200,
    );
    await eventually(
      async () => ((await metric(meteringMetrics, STORE_ERRORS)) > storeErrorsBefore ? true : undefined),
      'store errors to be counted',
      20_000,
      200,
    );
    // The de-duplication records are counted at each prune (every 10 s): unknown once one fails.
    await eventually(
      async () => Number.isNaN(await metric(meteringMetrics, 'gateway_metering_dedup_records')) || undefined,
      'the de-duplication record count to read unknown',
      25_000,
      200,
    );

    // Redis back: the redelivered events are metered.
    proxy = await startTcpProxy(proxy.port, redis.hostname, Number(redis.port || 6379));
  });
});
