/**
 * Faults injected into a running cluster: a service killed outright must cost a clear, retryable
 * error (never a hang or a 500) and nothing already accepted, and the cluster must heal when the
 * service comes back, without restarting anything else.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient } from '@gateway/redis';
import { connect } from 'nats';
import { eventually, hasNatsServer, startNatsCluster, streamWithLeader, waitForJetStream } from '@gateway/testing';
import { picoUsdToUsd } from '@gateway/catalog';
import { freePort, meteredAtLeast, meteredUsage, metric, settledMeteredUsage, startCluster, stopProcess, type Cluster } from './cluster.js';
import { startChatLoad } from './chat-load.js';

let cluster: Cluster;
let redis: RedisClient;

beforeAll(async () => {
  cluster = await startCluster();
  redis = connectRedis(cluster.redisUrl);
});

afterAll(async () => {
  await redis?.quit();
  await cluster?.stop();
});

function complete(model: string, content = 'hello'): Promise<Response> {
  return fetch(`${cluster.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
    signal: AbortSignal.timeout(10_000),
  });
}

/** Resolves once an edge's /metrics (at `metricsUrl`) counts `count` open decision streams to auth; rejects after 10 s. */
function authStreamsOpen(metricsUrl: string, count: number, description: string): Promise<true> {
  return eventually(async () => ((await metric(metricsUrl, 'gateway_auth_streams_open')) === count ? true : undefined), description, 10_000, 100);
}

async function statusOf(response: Promise<Response>): Promise<number> {
  const answer = await response;
  await answer.arrayBuffer();
  return answer.status;
}

describe('a killed router', () => {
  it('still serves explicit models from the pushed catalog, and auto again once it is back', async () => {
    await stopProcess(cluster.processes.router, 'SIGKILL');
    expect(await statusOf(complete('sim-mini'))).toBe(200);
    const auto = await complete('auto');
    expect(auto.status).toBe(503);
    expect(auto.headers.get('retry-after')).toBeTruthy();
    await auto.arrayBuffer();
    cluster.restart('router');
    await eventually(async () => (await statusOf(complete('auto'))) === 200 || undefined, 'auto to answer again', 15_000, 200);
  });
});

describe('a killed auth', () => {
  it('answers 503 with Retry-After, never lets a request through, stays ready, and recovers by itself', async () => {
    await stopProcess(cluster.processes.auth, 'SIGKILL');
    const refused = await complete('sim-mini');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBeTruthy();
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('auth_unavailable');
    // The edge stays in its Service meanwhile: its readiness is its own, not auth's.
    const readyz = await fetch(cluster.baseUrl.replace(/\/v1$/, '/readyz'));
    expect(readyz.status).toBe(200);
    cluster.restart('auth');
    await eventually(async () => (await statusOf(complete('sim-mini'))) === 200 || undefined, 'auth to answer again', 15_000, 200);
    // The edge's decision streams are back too, and carry the decisions again.
    const edgeMetrics = `http://127.0.0.1:${cluster.ports.edgeMetrics}/metrics`;
    await authStreamsOpen(edgeMetrics, 2, 'the decision streams to reopen');
    const streamed = await metric(edgeMetrics, 'gateway_auth_calls_total', { method: 'check_key', path: 'stream' });
    expect(await statusOf(complete('sim-mini'))).toBe(200);
    expect(await metric(edgeMetrics, 'gateway_auth_calls_total', { method: 'check_key', path: 'stream' })).toBe(streamed + 1);
  });
});

describe('a stalled auth', () => {
  it("costs a 503 at the call's deadline, not a hang, and serves again once it resumes", async () => {
    const edgeMetrics = `http://127.0.0.1:${cluster.ports.edgeMetrics}/metrics`;
    await authStreamsOpen(edgeMetrics, 2, 'the decision streams to be open');
    const auth = cluster.processes.auth;
    auth.kill('SIGSTOP');
    try {
      const started = Date.now();
      const refused = await complete('sim-mini');
      // EDGE_CONTROL_DEADLINE_MS is 2 s: the stream stays open, so only the call's own deadline ends the wait.
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_900);
      expect(Date.now() - started).toBeLessThan(4_000);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBeTruthy();
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('auth_unavailable');
    } finally {
      auth.kill('SIGCONT');
    }
    await eventually(async () => (await statusOf(complete('sim-mini'))) === 200 || undefined, 'auth to answer again', 15_000, 200);
  });
});

describe('an auth replica killed mid-stream behind an edge with two', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const children: ChildProcess[] = [];
  afterAll(async () => {
    await Promise.all(children.map((child) => stopProcess(child)));
  });

  it('answers the requests it held with 503s, not hangs, and serves every later request from the other replica', async () => {
    const [authPort, authMetricsPort, edgePort, edgeMetricsPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const common = { ...(process.env as Record<string, string>), LOG_LEVEL: 'warn', REDIS_URL: cluster.redisUrl, NATS_URL: cluster.natsUrl };
    const startAuth = () =>
      spawn(process.execPath, ['services/auth/dist/main.js'], {
        cwd: root,
        stdio: 'ignore',
        env: { ...common, AUTH_LISTEN_ADDR: `127.0.0.1:${authPort}`, AUTH_METRICS_PORT: String(authMetricsPort), GATEWAY_BOOTSTRAP_KEY: '' },
      });
    // The cluster's own edge keeps its streams on the cluster's auth: count from there.
    const clusterEdgeMetrics = `http://127.0.0.1:${cluster.ports.edgeMetrics}/metrics`;
    await authStreamsOpen(clusterEdgeMetrics, 2, "the cluster edge's streams to be open");
    const authMetrics = [`http://127.0.0.1:${cluster.ports.authMetrics}/metrics`, `http://127.0.0.1:${authMetricsPort}/metrics`];
    const baseline = await metric(authMetrics[0]!, 'gateway_auth_decide_streams_open');
    const second = startAuth();
    children.push(second);
    await eventually(
      async () => (await fetch(`http://127.0.0.1:${authMetricsPort}/readyz`).catch(() => undefined))?.status === 200,
      'the second auth to be ready',
      30_000,
      100,
    );
    const edge = spawn(process.execPath, ['services/edge/dist/main.js'], {
      cwd: root,
      stdio: 'ignore',
      env: {
        ...common,
        EDGE_HOST: '127.0.0.1',
        EDGE_PORT: String(edgePort),
        EDGE_METRICS_PORT: String(edgeMetricsPort),
        EDGE_AUTH_STREAMS: '4',
        AUTH_SERVICE_ADDR: `ipv4:127.0.0.1:${cluster.ports.auth},127.0.0.1:${authPort}`,
        ROUTER_SERVICE_ADDR: `127.0.0.1:${cluster.ports.router}`,
        EXECUTOR_SERVICE_ADDR: `127.0.0.1:${cluster.ports.executor}`,
      },
    });
    children.push(edge);
    const origin = `http://127.0.0.1:${edgePort}`;
    await eventually(async () => (await fetch(`${origin}/readyz`).catch(() => undefined))?.status === 200, 'the edge to be ready', 30_000, 100);
    // The edge's four streams, two on each replica.
    await eventually(
      async () => {
        const open = await Promise.all(authMetrics.map((url) => metric(url, 'gateway_auth_decide_streams_open')));
        return open[0] === baseline + 2 && open[1] === 2 ? true : undefined;
      },
      'two decision streams on each auth replica',
      10_000,
      100,
    );

    const request = () =>
      fetch(`${origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: 'hello' }] }),
        signal: AbortSignal.timeout(10_000),
      }).then(async (response) => ({ status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() }));

    // Eight clients in a loop; the second replica dies once 16 answers are in, with requests in
    // flight on it, and the clients go on until 24 more are answered after its death (on a loaded
    // machine that takes longer, never fewer answers).
    const answers: Array<Awaited<ReturnType<typeof request>>> = [];
    let answeredAtKill: number | undefined;
    let killed: Promise<unknown> | undefined;
    const giveUpAt = Date.now() + 60_000;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while ((answeredAtKill === undefined || answers.length < answeredAtKill + 24) && Date.now() < giveUpAt) {
          answers.push(await request());
          if (answeredAtKill === undefined && answers.length >= 16) {
            answeredAtKill = answers.length;
            killed = stopProcess(second, 'SIGKILL');
          }
        }
      }),
    );
    await killed;
    expect(answeredAtKill).toBeDefined();
    expect(answers.length).toBeGreaterThanOrEqual(answeredAtKill! + 24);
    for (const answer of answers) {
      if (answer.status === 200) continue;
      expect(answer.status).toBe(503);
      expect(answer.retryAfter).toBeTruthy();
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'auth_unavailable' } });
    }

    // From here on every request is decided, over streams reopened on the replica left.
    await authStreamsOpen(`http://127.0.0.1:${edgeMetricsPort}/metrics`, 4, 'the edge to reopen its four streams');
    expect(await metric(authMetrics[0]!, 'gateway_auth_decide_streams_open')).toBe(baseline + 4);
    const streamedBefore = await metric(`http://127.0.0.1:${edgeMetricsPort}/metrics`, 'gateway_auth_calls_total', { method: 'check_key', path: 'stream' });
    const later = await Promise.all(Array.from({ length: 20 }, () => request()));
    expect(later.map((answer) => answer.status)).toEqual(Array.from({ length: 20 }, () => 200));
    expect(await metric(`http://127.0.0.1:${edgeMetricsPort}/metrics`, 'gateway_auth_calls_total', { method: 'check_key', path: 'stream' })).toBe(
      streamedBefore + 20,
    );
  });
});

describe('a killed executor', () => {
  it('answers 503 while it is gone and serves again when it returns', async () => {
    await stopProcess(cluster.processes.executor, 'SIGKILL');
    expect(await statusOf(complete('sim-mini'))).toBe(503);
    cluster.restart('executor');
    await eventually(async () => (await statusOf(complete('sim-mini'))) === 200 || undefined, 'the executor to answer again', 60_000, 200);
  });
});

describe('a killed metering', () => {
  it('loses no usage event: those published while it was down are metered when it returns', async () => {
    // Earlier tests' events metered first, then metering killed: the one event below is all it misses.
    const before = await settledMeteredUsage(cluster, redis);
    await stopProcess(cluster.processes.metering, 'SIGKILL');
    const response = await complete('sim-mini');
    expect(response.status).toBe(200);
    const reported = ((await response.json()) as { gateway: { cost_usd: number } }).gateway.cost_usd;
    cluster.restart('metering');
    const after = await meteredAtLeast(redis, cluster.apiKey, before.requests + 1, {
      description: 'the event to be metered after the restart',
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    expect(after.requests - before.requests).toBe(1);
    expect(picoUsdToUsd(after.cost_pico_usd - before.cost_pico_usd)).toBe(reported);
  });
});

describe('a stopped NATS', () => {
  it('keeps answering and meters every request once NATS is back', async () => {
    const { spawn } = await import('node:child_process');
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { freePort } = await import('./cluster.js');
    const port = await freePort();
    const store = mkdtempSync(join(tmpdir(), 'gateway-nats-'));
    const startNats = () => spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], { stdio: 'ignore' });
    let nats = startNats();
    const own = await startCluster({ env: { NATS_URL: `nats://127.0.0.1:${port}`, USAGE_STREAM_REPLICAS: '1' } });
    try {
      const call = () =>
        fetch(`${own.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${own.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: 'hello' }] }),
          signal: AbortSignal.timeout(10_000),
        });
      await stopProcess(nats, 'SIGKILL');
      const during = await Promise.all([call(), call(), call()]);
      expect(during.map((response) => response.status)).toEqual([200, 200, 200]);
      const answers = await Promise.all(during.map((response) => response.json() as Promise<{ gateway: { cost_usd: number } }>));
      nats = startNats();
      const usage = await meteredAtLeast(redis, own.apiKey, 3, {
        description: 'the three events to be metered after NATS returned',
        timeoutMs: 30_000,
        intervalMs: 200,
      });
      expect(usage.requests).toBe(3);
      expect(picoUsdToUsd(usage.cost_pico_usd)).toBeCloseTo(
        answers.reduce((sum, answer) => sum + answer.gateway.cost_usd, 0),
        12,
      );
    } finally {
      await own.stop();
      await stopProcess(nats);
      rmSync(store, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!hasNatsServer())('a NATS server lost with its disk, on a three-node JetStream cluster', () => {
  it("keeps answering, and meters every answered request exactly once, while the stream's leader is down and after it returns empty", async () => {
    const nats = await startNatsCluster(3);
    const probe = await connect({ servers: nats.nodes.map((node) => node.url) });
    await waitForJetStream(probe);
    const own = await startCluster({ env: { NATS_URL: nats.url, USAGE_STREAM_REPLICAS: '3' } });
    try {
      // JetStream's API may time out while the new cluster settles: asked again until it answers.
      const manager = await eventually(() => probe.jetstreamManager().catch(() => undefined), 'JetStream to answer', 30_000, 200);
      // One answer of JetStream's API holds both the leader and the replicas: a second request may
      // meet the cluster still settling its new stream and time out.
      const created = await streamWithLeader(() => manager.streams.info(own.usageStream), 'the usage stream to be created with a leader', 30_000);
      const leader = created.cluster!.leader!;
      expect(created.config.num_replicas).toBe(3);

      const load = startChatLoad<{ gateway: { cost_usd: number } }>(own, { clients: 4, content: 'hello', timeoutMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await nats.node(leader).kill();
      nats.node(leader).wipeStore();
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      await nats.node(leader).start();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const { answers, statuses } = await load.stop();
      const answered = answers.map((answer) => answer.gateway.cost_usd);

      // Losing a NATS server never reaches the callers.
      expect([...statuses.keys()]).toEqual([200]);
      expect(answered.length).toBeGreaterThan(20);
      // The stream's replicas catch up with the returned server before the consumer moves on: slow on a busy machine.
      const usage = await meteredAtLeast(redis, own.apiKey, answered.length, {
        description: 'every answered request to be metered',
        timeoutMs: 90_000,
        intervalMs: 200,
      });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const settled = await meteredUsage(redis, own.apiKey);
      expect(settled.requests).toBe(answered.length);
      expect(settled.cost_pico_usd).toBe(usage.cost_pico_usd);
      expect(picoUsdToUsd(settled.cost_pico_usd)).toBeCloseTo(
        answered.reduce((sum, cost) => sum + cost, 0),
        9,
      );
    } finally {
      await own.stop();
      await probe.close();
      await nats.stop();
    }
  }, 180_000);
});
