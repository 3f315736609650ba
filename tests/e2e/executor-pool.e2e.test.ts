/**
 * The executor pool end to end: the cluster with TWO executor replicas (the one startCluster runs
 * and one spawned here), reached by the edge through one gRPC target that lists both addresses
 * (round robin), and a catalog whose `fake-model` is an openai-compatible model served by a fake
 * upstream in this process (falling back to the simulated `sim-mini`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { callUnary, createClient, createHealthClient, isServing } from '@gateway/grpc';
import {
  loadGatewayGrpc,
  type CatalogSnapshotOutput,
  type ExecuteRequest,
  type ExecuteResponseOutput,
  type ExecutorServiceClient,
  type RouterServiceClient,
} from '@gateway/proto';
import { eventually, type FakeUpstream, natsUrl, replayJson, replaySse, startFakeUpstream, fixture } from '@gateway/testing';
import { SIM_MINI_ENTRY, fakeModelEntry, freePort, metric, startCluster, stopProcess, writeCatalog, type Cluster } from './cluster.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KEY_VARIABLE = 'FAKE_UPSTREAM_API_KEY';
const BREAKER_OPEN_MS = 1_500;

let upstream: FakeUpstream;
let cluster: Cluster;
let client: OpenAI;
let second: ChildProcess | undefined;
let secondLogs: string[] = [];
let ports: { first: number; second: number; secondMetrics: number };
let commonEnv: Record<string, string>;
const grpc = loadGatewayGrpc().gateway;

function catalogFile(baseUrl: string): string {
  return writeCatalog('executor-pool', [SIM_MINI_ENTRY, fakeModelEntry(baseUrl, KEY_VARIABLE)]);
}

/** Starts the second executor replica and waits until it serves. */
async function startSecondExecutor(): Promise<void> {
  secondLogs = [];
  second = spawn(process.execPath, ['services/executor/dist/main.js'], {
    cwd: ROOT,
    env: { ...commonEnv, EXECUTOR_LISTEN_ADDR: `127.0.0.1:${ports.second}`, EXECUTOR_METRICS_PORT: String(ports.secondMetrics) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  second.stdout!.on('data', (data: Buffer) => secondLogs.push(data.toString()));
  second.stderr!.on('data', (data: Buffer) => secondLogs.push(data.toString()));
  await waitServing(ports.second, () => `the second executor to serve:\n${secondLogs.join('')}`);
}

/** Waits until the executor on `port` serves gRPC health. */
async function waitServing(port: number, what: () => string): Promise<void> {
  const health = createHealthClient(`127.0.0.1:${port}`);
  try {
    // A process starting on a loaded machine may take tens of seconds; its logs are read at the
    // failure, not when the wait begins.
    await eventually(() => isServing(health).then((serving) => serving || undefined), 'a serving executor', 45_000, 100).catch(() => {
      throw new Error(`timed out waiting for ${what()}`);
    });
  } finally {
    health.close();
  }
}

/** The count of completions an executor answered with `model` and outcome ok, from its metrics. */
async function answered(metricsPort: number, model: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const match = new RegExp(`gateway_executor_requests_total\\{model="${model}",provider="[^"]+",outcome="ok"[^}]*\\} (\\d+)`).exec(text);
  return match ? Number(match[1]) : 0;
}

function post(body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  return fetch(`${cluster.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
}

const hello = [{ role: 'user', content: 'Hello there' }];

/** The latest catalog snapshot the router pushes. */
async function latestSnapshot(router: RouterServiceClient): Promise<CatalogSnapshotOutput> {
  return new Promise((resolve, reject) => {
    const call = router.WatchCatalog({}, { deadline: Date.now() + 2_000 });
    call.once('data', (snapshot: CatalogSnapshotOutput) => {
      call.cancel();
      resolve(snapshot);
    });
    call.once('error', (error: Error & { code?: number }) => {
      if (error.code !== 1) reject(error);
    });
  });
}

beforeAll(async () => {
  upstream = await startFakeUpstream(replayJson(200, fixture('chat-completion.json')));
  ports = { first: await freePort(), second: await freePort(), secondMetrics: await freePort() };
  commonEnv = {
    ...(process.env as Record<string, string>),
    LOG_LEVEL: 'warn',
    CATALOG_PATH: catalogFile(upstream.baseUrl),
    [KEY_VARIABLE]: 'sk-test-executor-pool',
    // Our own subject: other clusters on the same NATS must not see these reports.
    DEPLOYMENT_HEALTH_SUBJECT: `health.v1.deployment.test-${randomBytes(4).toString('hex')}`,
    EXECUTOR_HEALTH_INTERVAL_MS: '200',
    EXECUTOR_BREAKER_CONSECUTIVE_FAILURES: '3',
    EXECUTOR_BREAKER_OPEN_MS: String(BREAKER_OPEN_MS),
    EXECUTOR_BREAKER_MAX_OPEN_MS: String(BREAKER_OPEN_MS),
    EXECUTOR_RETRY_BASE_DELAY_MS: '10',
    EXECUTOR_SHUTDOWN_GRACE_MS: '8000',
  };
  commonEnv.NATS_URL = await natsUrl();
  await startSecondExecutor();
  cluster = await startCluster({
    // Pro leaves catalog fallbacks off unless a request asks, so a failing model shows as a 503.
    plan: 'pro',
    env: {
      ...commonEnv,
      EXECUTOR_LISTEN_ADDR: `127.0.0.1:${ports.first}`,
      // One target, both replicas: grpc-js balances round robin over every listed address.
      EXECUTOR_SERVICE_ADDR: `ipv4:127.0.0.1:${ports.first},127.0.0.1:${ports.second}`,
    },
  });
  // The edge is ready once either replica serves: wait for the first one too.
  await waitServing(ports.first, () => `the first executor to serve:\n${cluster.logs.executor.join('')}`);
  client = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 });
});

afterAll(async () => {
  await stopProcess(second);
  await cluster?.stop();
  await upstream?.close();
});

describe('two executor replicas', () => {
  it('share the load', async () => {
    const counts = async () => [await answered(cluster.ports.executorMetrics, 'sim-mini'), await answered(ports.secondMetrics, 'sim-mini')];
    const before = await counts();
    let sent = 0;
    // Requests in rounds of 12 until both replicas have answered some: the edge's channel takes a
    // replica into its rotation once it has connected to it (within its reconnect backoff).
    await eventually(
      async () => {
        for (let i = 0; i < 12; i += 1, sent += 1) {
          const completion = await client.chat.completions.create({ model: 'sim-mini', messages: [{ role: 'user', content: `Request ${sent}` }] });
          expect(completion.choices[0]?.message.content).toBeTruthy();
        }
        const after = await counts();
        return (after[0]! > before[0]! && after[1]! > before[1]!) || undefined;
      },
      'both replicas to answer requests',
      10_000,
      0,
    );
    const after = await counts();
    // Each request answered once, by one replica or the other.
    expect(after[0]! + after[1]! - before[0]! - before[1]!).toBe(sent);
  });
});

describe('cancellation', () => {
  it('a client that disconnects mid-stream aborts the upstream call at once', async () => {
    upstream.respond(replaySse(fixture('stream-text.sse'), { delayMs: 10_000, end: false }));
    const before = upstream.requests.length;
    const streamedBefore = await streamedOnCalls();
    const controller = new AbortController();
    const response = await post({ model: 'fake-model', messages: hello, stream: true }, controller.signal);
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    await reader.read();
    const abortedAt = performance.now();
    controller.abort();
    const closedAt = await upstream.requests[before]!.closed;
    // The upstream pauses 10 s before its next event: its call closed well before that, and
    // unfinished, so the client's leaving reached it (a bound for a loaded machine, not a target).
    expect(closedAt - abortedAt).toBeLessThan(2_000);
    expect(upstream.requests[before]!.finished).toBe(false);
    // It rode on a long-lived CompleteCalls stream, cancelled by a message rather than a reset.
    expect(await streamedOnCalls()).toBe(streamedBefore + 1);
  });
});

describe('backpressure', () => {
  it('a slow reader keeps memory bounded: the upstream is held back instead of buffered', async () => {
    const chunk = `data: ${JSON.stringify({ id: 'chatcmpl-big', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: 'word '.repeat(200) }, finish_reason: null }] })}\n\n`;
    const total = 200 * 1024 * 1024;
    let written = 0;
    upstream.respond(async (_request, response: ServerResponse) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      while (written < total && !response.destroyed) {
        written += chunk.length;
        if (!response.write(chunk)) {
          // Until the reader takes more, or goes away; the listener left over is removed.
          const waiting = new AbortController();
          await Promise.race([once(response, 'drain', { signal: waiting.signal }), once(response, 'close', { signal: waiting.signal })]).finally(() =>
            waiting.abort(),
          );
        }
      }
      response.end();
    });
    const rssBefore = await executorRssMiB();
    const streamedBefore = await streamedOnCalls();
    const controller = new AbortController();
    const response = await post({ model: 'fake-model', messages: hello, stream: true }, controller.signal);
    const reader = response.body!.getReader();
    await reader.read();
    // The client stops reading for 2 s; an unbounded buffer anywhere would take in the whole 200 MiB.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const writtenWhilePaused = written;
    const rssAfter = await executorRssMiB();
    controller.abort();
    expect(writtenWhilePaused).toBeLessThan(48 * 1024 * 1024);
    expect(rssAfter - rssBefore).toBeLessThan(96);
    // Held back by the credit of a streamed call on a shared CompleteCalls stream, not by HTTP/2
    // flow control of a stream of its own.
    expect(await streamedOnCalls()).toBe(streamedBefore + 1);
  });
});

/** Streamed completions the edge sent on CompleteCalls streams. */
function streamedOnCalls(): Promise<number> {
  return metric(`http://127.0.0.1:${cluster.ports.edgeMetrics}/metrics`, 'gateway_executor_calls_total', { method: 'stream', path: 'stream' });
}

/** Resident memory of both executors, MiB. */
async function executorRssMiB(): Promise<number> {
  const { processRssMiB } = await import('../../bench/measure.js');
  return processRssMiB(cluster.processes.executor.pid!) + (second?.pid ? processRssMiB(second.pid) : 0);
}

describe('an upstream that is down', () => {
  let router: RouterServiceClient;
  let executor: ExecutorServiceClient;
  beforeAll(() => {
    router = createClient(grpc.router.v1.RouterService, `127.0.0.1:${cluster.ports.router}`);
    executor = createClient(grpc.executor.v1.ExecutorService, `127.0.0.1:${ports.first}`);
  });
  afterAll(() => {
    router.close();
    executor.close();
  });

  it('gives 503 model_unavailable with a Retry-After from the first failing request, and once the breakers open the router pushes available=false', async () => {
    upstream.respond(replayJson(503, fixture('error-500.json')));
    const first = await post({ model: 'fake-model', messages: hello, fallbacks: false });
    expect(first.status).toBe(503);
    expect(((await first.json()) as { error: { code: string } }).error.code).toBe('model_unavailable');
    expect(Number(first.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Every replica's breaker opens as requests keep failing; then the router marks the model down.
    const snapshot = await eventually(
      async () => {
        const attempt = await post({ model: 'fake-model', messages: hello, fallbacks: false });
        expect(attempt.status).toBe(503);
        await attempt.arrayBuffer();
        const latest = await latestSnapshot(router);
        return latest.models.find((model) => model.id === 'fake-model')?.available === false ? latest : undefined;
      },
      'the router to push fake-model as unavailable',
      20_000,
      50,
    );
    expect(snapshot.models.find((model) => model.id === 'sim-mini')?.available).toBe(true);
    // Answered without any upstream call: the breakers are open.
    const calls = upstream.requests.length;
    const refused = await post({ model: 'fake-model', messages: hello, fallbacks: false });
    expect(refused.status).toBe(503);
    expect(upstream.requests.length).toBe(calls);
  });

  it('an executor asked with fallbacks answers from the next model and says what it tried (gRPC)', async () => {
    const request: ExecuteRequest = {
      request_id: 'fallback-test',
      model_id: 'fake-model',
      fallbacks: ['sim-mini'],
      request: { model: 'fake-model', messages: [{ role: 'ROLE_USER', text: 'Hello there' }] },
    };
    const response = await callUnary<ExecuteRequest, ExecuteResponseOutput>(executor, executor.Complete, request, { deadlineMs: 10_000 });
    expect(response.model_id).toBe('sim-mini');
    expect(response.attempts).toMatchObject([{ model_id: 'fake-model', reason: 'model_unavailable' }]);
    // 0 while its breakers are open; 1 when their open period ran out first (a loaded machine) and
    // the one probe they let through failed.
    expect(response.attempts[0]!.tries).toBeLessThanOrEqual(1);
  });

  it('with fallbacks the next model answers and gateway.routed_to shows it', async () => {
    for (const fallbacks of [['sim-mini'], true]) {
      const response = await post({ model: 'fake-model', messages: hello, fallbacks });
      expect(response.status).toBe(200);
      const body = (await response.json()) as { model: string; gateway: { routed_to: string; tried: Array<{ model: string; reason: string }> } };
      expect(body.gateway.routed_to).toBe('sim-mini');
      expect(body.model).toBe('sim-mini');
      expect(body.gateway.tried).toEqual([{ model: 'fake-model', reason: 'model_unavailable' }]);
    }
  });

  it('recovers: once the upstream answers again, the breakers probe and close', async () => {
    upstream.respond(replayJson(200, fixture('chat-completion.json')));
    const completion = await eventually(
      async () => {
        const response = await post({ model: 'fake-model', messages: hello, fallbacks: false });
        return response.status === 200 ? ((await response.json()) as { gateway: { routed_to: string } }) : undefined;
      },
      'fake-model to answer again',
      20_000,
      100,
    );
    expect(completion.gateway.routed_to).toBe('fake-model');
    await eventually(
      async () => {
        const latest = await latestSnapshot(router);
        return latest.models.find((model) => model.id === 'fake-model')?.available === true || undefined;
      },
      'the router to push fake-model as available',
      10_000,
      100,
    );
  });
});

describe('replicas that go away', () => {
  /** Whole completions on sim-mini that take about `ms` before their answer. */
  function slowRequests(count: number, ms: number, stream = false): Array<Promise<{ status: number; text: string }>> {
    return Array.from({ length: count }, (_, index) =>
      post({ model: 'sim-mini', stream, messages: [{ role: 'user', content: `Slow ${index} [[simulate:ttft_ms=${ms}]]` }] }).then(async (response) => ({
        status: response.status,
        text: await response.text(),
      })),
    );
  }

  it('a replica that drains (SIGTERM) finishes its in-flight streams, and new calls go to the other', async () => {
    if (second?.exitCode !== null) await startSecondExecutor();
    const inFlight = slowRequests(6, 1_500, true);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const exited = stopProcess(second, 'SIGTERM');
    const results = await Promise.all(inFlight);
    for (const result of results) {
      expect(result.status).toBe(200);
      expect(result.text).toContain('data: [DONE]');
    }
    await exited;
    expect(second?.exitCode).toBe(0);
    const after = await Promise.all(slowRequests(6, 10));
    expect(after.map((result) => result.status)).toEqual([200, 200, 200, 200, 200, 200]);
  }, 120_000);

  it('after a replica is killed, new calls all go to the one left', async () => {
    await startSecondExecutor();
    second!.kill('SIGKILL');
    await new Promise((resolve) => second!.once('exit', resolve));
    const after = await Promise.all(slowRequests(8, 10));
    expect(after.map((result) => result.status)).toEqual(Array(8).fill(200));
  }, 120_000);

  it('a replica killed mid-run loses no request that had not started streaming', async () => {
    await startSecondExecutor();
    const inFlight = [...slowRequests(6, 1_500), ...slowRequests(6, 1_500, true)];
    await new Promise((resolve) => setTimeout(resolve, 400));
    second!.kill('SIGKILL');
    const results = await Promise.all(inFlight);
    expect(results.map((result) => result.status)).toEqual(Array(12).fill(200));
  }, 120_000);
});
