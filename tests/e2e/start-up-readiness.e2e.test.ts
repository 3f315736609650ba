/**
 * Readiness from the first instant of a process's life to its exit: each service is started again
 * beside a running cluster (the built main.js, as an orchestrator starts a new replica) while its
 * /readyz is polled as fast as one request follows another, from before the process listens. Once
 * it answers, every answer is 503 (starting) until it is ready, then 200; never a 500 or a dropped
 * connection, whatever the start-up is doing. On SIGTERM it answers 503 (or no longer listens),
 * never a 500, and exits 0.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, freePort, type TestDatabase } from '@gateway/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Cluster, startCluster } from './cluster.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Consecutive 200s after which a process counts as ready for good. */
const READY_STREAK = 20;

let cluster: Cluster;
let database: TestDatabase;
const started: ChildProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase('start_up_readiness');
  cluster = await startCluster({ mcp: true, requestLog: { databaseUrl: database.url } });
}, 120_000);

afterAll(async () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await cluster?.stop();
  await database?.drop();
});

/** One answer of a poll: an HTTP status, or the code of the connection's failure. */
type Outcome = number | string;

/** The outcomes in order, each run of equal ones once, with its length: `503 x12`. */
function runs(outcomes: readonly Outcome[]): string[] {
  const result: Array<{ outcome: Outcome; count: number }> = [];
  for (const outcome of outcomes) {
    const last = result.at(-1);
    if (last?.outcome === outcome) last.count += 1;
    else result.push({ outcome, count: 1 });
  }
  return result.map(({ outcome, count }) => `${outcome} x${count}`);
}

async function poll(url: string): Promise<Outcome> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    await response.arrayBuffer();
    return response.status;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return cause?.code ?? (error as Error).name;
  }
}

/**
 * Spawns a service's built main.js with `env` over the cluster's and polls `url` from before the
 * spawn until READY_STREAK 200s in a row: the outcomes, and the process.
 */
async function startPolled(service: string, env: Record<string, string>, url: string): Promise<{ child: ChildProcess; outcomes: Outcome[]; logs: string[] }> {
  const outcomes: Outcome[] = [await poll(url)];
  const logs: string[] = [];
  const child = spawn(process.execPath, [`services/${service}/dist/main.js`], {
    cwd: ROOT,
    env: { ...cluster.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  child.stdout!.on('data', (data: Buffer) => logs.push(data.toString()));
  child.stderr!.on('data', (data: Buffer) => logs.push(data.toString()));
  const deadline = Date.now() + 60_000;
  let streak = 0;
  while (streak < READY_STREAK) {
    if (child.exitCode !== null) throw new Error(`${service} exited with ${child.exitCode}:\n${logs.join('')}`);
    if (Date.now() > deadline) throw new Error(`${service} was not ready within 60 s (${runs(outcomes).join(', ')}):\n${logs.join('')}`);
    const outcome = await poll(url);
    outcomes.push(outcome);
    streak = outcome === 200 ? streak + 1 : 0;
  }
  return { child, outcomes, logs };
}

/** Checks the start-up's outcomes: failures to connect, then 503s, then 200s only. */
function expectStartUp(service: string, outcomes: readonly Outcome[]): void {
  const firstAnswer = outcomes.findIndex((outcome) => typeof outcome === 'number');
  const firstReady = outcomes.indexOf(200);
  const described = `${service}: ${runs(outcomes).join(', ')}`;
  // Before it listens the connection is refused; the first poll ran before the process existed.
  expect(outcomes[0], described).toBe('ECONNREFUSED');
  expect(
    outcomes.slice(0, firstAnswer).every((outcome) => outcome === 'ECONNREFUSED'),
    described,
  ).toBe(true);
  expect(
    outcomes.slice(firstAnswer, firstReady).every((outcome) => outcome === 503),
    described,
  ).toBe(true);
  expect(
    outcomes.slice(firstReady).every((outcome) => outcome === 200),
    described,
  ).toBe(true);
}

/** Sends SIGTERM and polls `url` until the process exits: it answers 503 or refuses, never anything else, and exits 0. */
async function expectShutdown(service: string, child: ChildProcess, url: string, options: { notReadyFirst?: boolean } = {}): Promise<void> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let running = true;
  void exited.then(() => {
    running = false;
  });
  child.kill('SIGTERM');
  const outcomes: Outcome[] = [];
  while (running) outcomes.push(await poll(url));
  expect(await exited, service).toBe(0);
  // The signal is delivered while a poll is in flight: a 200 may come before the first 503.
  const afterSignal = outcomes.slice(outcomes.findIndex((outcome) => outcome !== 200));
  expect(
    afterSignal.every((outcome) => outcome === 503 || outcome === 'ECONNREFUSED' || outcome === 'ECONNRESET' || outcome === 'UND_ERR_SOCKET'),
    `${service}: ${runs(outcomes).join(', ')}`,
  ).toBe(true);
  // With a shutdown delay it reports not-ready before it stops listening.
  if (options.notReadyFirst) expect(afterSignal[0], `${service}: ${runs(outcomes).join(', ')}`).toBe(503);
}

describe('readiness from the first instant of start-up', () => {
  it("the edge's /readyz answers 503 until it is ready, then 200, never a 500 or a dropped connection, and 503 on SIGTERM", async () => {
    const [port, adminPort] = [await freePort(), await freePort()];
    const url = `http://127.0.0.1:${port}/readyz`;
    const { child, outcomes } = await startPolled(
      'edge',
      // The admin port makes start-up await one more listen after the public one.
      { EDGE_PORT: String(port), EDGE_ADMIN_PORT: String(adminPort), EDGE_METRICS_PORT: '0', EDGE_SHUTDOWN_DELAY_MS: '1000' },
      url,
    );
    expectStartUp('edge', outcomes);
    await expectShutdown('edge', child, url, { notReadyFirst: true });
  }, 120_000);

  it.each([
    ['auth', 'AUTH'],
    ['router', 'ROUTER'],
    ['executor', 'EXECUTOR'],
    ['metering', 'METERING'],
    ['mcp', 'MCP'],
    ['request-log', 'REQUEST_LOG'],
  ])(
    "%s's metrics /readyz answers 503 until it is ready, then 200, never a 500, and 503 on SIGTERM",
    async (service, prefix) => {
      const [port, metricsPort] = [await freePort(), await freePort()];
      const url = `http://127.0.0.1:${metricsPort}/readyz`;
      const { child, outcomes } = await startPolled(
        service,
        { [`${prefix}_LISTEN_ADDR`]: `127.0.0.1:${port}`, [`${prefix}_METRICS_PORT`]: String(metricsPort) },
        url,
      );
      expectStartUp(service, outcomes);
      await expectShutdown(service, child, url);
    },
    120_000,
  );
});
