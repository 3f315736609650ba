/**
 * The executor pool: throughput of whole completions with 1, 2 and 3 executor replicas (processes)
 * behind one round-robin gRPC target, against a fake openai-compatible upstream in this process;
 * and the memory one open stream costs an executor, at 1,000 concurrent streams held open by the
 * upstream. The gateway's other services are not involved: what is measured is the pool alone.
 *
 * On a machine with few cores the load generator, the fake upstream and the replicas share them,
 * so the scaling ratio says how much the replicas add on this machine, not an upper bound.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createClient, createHealthClient, isServing, Metadata } from '@gateway/grpc';
import { loadGatewayGrpc, type ExecuteRequest, type ExecutorServiceClient } from '@gateway/proto';
import { replayJson, replaySse, startFakeUpstream, type FakeUpstream, fixture } from '@gateway/testing';
import { fakeModelEntry, freePort, stopProcess, writeCatalog } from '../tests/e2e/cluster.js';
import { fixed, processCpuMs, processRssMiB, table } from './measure.js';
import type { BenchSuite } from './run.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const KEY_VARIABLE = 'FAKE_UPSTREAM_API_KEY';
const CONCURRENCY = 64;
const SECONDS = 6;
const OPEN_STREAMS = 1_000;

interface Replica {
  process: ChildProcess;
  port: number;
}

function catalogFile(baseUrl: string): string {
  return writeCatalog('executor-bench', [fakeModelEntry(baseUrl, KEY_VARIABLE, 'fake-model', [])]);
}

async function startReplica(catalogPath: string): Promise<Replica> {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, ['services/executor/dist/main.js'], {
    cwd: ROOT,
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      CATALOG_PATH: catalogPath,
      [KEY_VARIABLE]: 'sk-bench',
      EXECUTOR_LISTEN_ADDR: `127.0.0.1:${port}`,
      EXECUTOR_METRICS_PORT: String(metricsPort),
      UPSTREAM_MAX_CONNECTIONS: String(OPEN_STREAMS * 2),
      DEPLOYMENT_HEALTH_SUBJECT: `health.v1.deployment.bench-${process.pid}`,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const health = createHealthClient(`127.0.0.1:${port}`);
  const deadline = Date.now() + 20_000;
  while (!(await isServing(health))) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('an executor replica did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  health.close();
  return { process: child, port };
}

const request: ExecuteRequest = {
  request_id: 'bench',
  model_id: 'fake-model',
  request: { model: 'fake-model', messages: [{ role: 'ROLE_USER', text: 'Say hello.' }] },
};

function completeOnce(client: ExecutorServiceClient): Promise<void> {
  return new Promise((resolve, reject) => {
    client.Complete(request, new Metadata(), { deadline: Date.now() + 10_000 }, (error) => (error ? reject(error) : resolve()));
  });
}

/** Completions per second with CONCURRENCY calls kept in flight for SECONDS. */
async function throughput(client: ExecutorServiceClient): Promise<{ perSecond: number; failures: number }> {
  for (let i = 0; i < 200; i += 1) await completeOnce(client);
  let done = 0;
  let failures = 0;
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        await completeOnce(client).then(
          () => {
            done += 1;
          },
          () => {
            failures += 1;
          },
        );
      }
    }),
  );
  return { perSecond: done / SECONDS, failures };
}

/** Opens `count` streamed completions on `client`; resolves with them once each has its first event (or failed). */
async function openStreams(client: ExecutorServiceClient, count: number): Promise<ReturnType<ExecutorServiceClient['StreamComplete']>[]> {
  const calls = Array.from({ length: count }, () =>
    client.StreamComplete({ ...request, request: { ...request.request, stream: true } }, new Metadata(), { deadline: Date.now() + 120_000 }),
  );
  await Promise.all(
    calls.map(
      (call) =>
        new Promise<void>((resolve) => {
          call.once('data', () => resolve());
          call.once('error', () => resolve());
        }),
    ),
  );
  return calls;
}

export const suite: BenchSuite = {
  name: 'executor',
  description: 'executor pool throughput with 1, 2 and 3 replicas, and memory per open stream',
  async run() {
    const upstream: FakeUpstream = await startFakeUpstream(replayJson(200, fixture('chat-completion.json')));
    // The fake upstream keeps every request; a bench sends too many to keep.
    const forget = setInterval(() => {
      upstream.requests.length = 0;
    }, 500);
    const catalogPath = catalogFile(upstream.baseUrl);
    const replicas: Replica[] = [];
    const grpc = loadGatewayGrpc().gateway;
    try {
      for (let count = 1; count <= 3; count += 1) replicas.push(await startReplica(catalogPath));
      const rows: Array<Array<string | number>> = [];
      let single = 0;
      for (let count = 1; count <= 3; count += 1) {
        const target = `ipv4:${replicas
          .slice(0, count)
          .map((replica) => `127.0.0.1:${replica.port}`)
          .join(',')}`;
        const client = createClient(grpc.executor.v1.ExecutorService, target);
        const cpuBefore = replicas.slice(0, count).map((replica) => processCpuMs(replica.process.pid!));
        const ownBefore = process.cpuUsage();
        const result = await throughput(client);
        const own = process.cpuUsage(ownBefore);
        const cpu = replicas.slice(0, count).map((replica, index) => processCpuMs(replica.process.pid!) - cpuBefore[index]!);
        client.close();
        if (count === 1) single = result.perSecond;
        // CPU shares over the measured run plus its warm-up: where the machine's cores went.
        const share = (ms: number) => fixed((ms / (SECONDS * 1000)) * 100, 0);
        rows.push([
          count,
          Math.round(result.perSecond),
          fixed(result.perSecond / single),
          result.failures,
          cpu.map(share).join(' / '),
          share((own.user + own.system) / 1000),
        ]);
      }
      console.log(`Whole completions through the pool, ${CONCURRENCY} calls in flight for ${SECONDS} s each (fake upstream, no delay):\n`);
      table(['replicas', 'completions/s', 'vs 1 replica', 'failures', 'replica CPU %', 'load generator + fake upstream CPU %'], rows);

      // Memory per open stream: the upstream sends the first event, then holds every stream open.
      upstream.respond(replaySse(fixture('stream-text.sse'), { delayMs: 120_000, end: false }));
      // A fresh replica, warmed by a few streams, so the throughput runs' heap does not blur it.
      await Promise.all(replicas.splice(0).map((replica) => stopProcess(replica.process)));
      const replica = await startReplica(catalogPath);
      replicas.push(replica);
      const client = createClient(grpc.executor.v1.ExecutorService, `127.0.0.1:${replica.port}`);
      const warm = await openStreams(client, 50);
      for (const call of warm) {
        call.on('error', () => undefined);
        call.cancel();
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const idle = processRssMiB(replica.process.pid!);
      const calls = await openStreams(client, OPEN_STREAMS);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const open = processRssMiB(replica.process.pid!);
      for (const call of calls) {
        call.on('error', () => undefined);
        call.cancel();
      }
      client.close();
      console.log(`\nMemory of one executor with ${OPEN_STREAMS} streams open (each past its first chunk, upstream holding):\n`);
      table(
        ['idle RSS MiB', `RSS with ${OPEN_STREAMS} streams MiB`, 'KiB per open stream'],
        [[fixed(idle, 0), fixed(open, 0), fixed(((open - idle) * 1024) / OPEN_STREAMS, 1)]],
      );
    } finally {
      clearInterval(forget);
      await Promise.all(replicas.map((replica) => stopProcess(replica.process)));
      await upstream.close();
    }
  },
};
