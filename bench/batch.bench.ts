/**
 * The batch lane on the path users run: the proxy suite's cluster (its own Redis and NATS, the
 * OpenAI-compatible mock upstream, a catalog model in front of it) with the batch service on a
 * PostgreSQL database of the run's own, measured in one run:
 *
 * 1. lines per second through the lane: a batch of LANE_LINES chat completion lines for the catalog
 *    model, uploaded with the official `openai` client and timed from `batches.create` to
 *    `completed` (polled with `retrieve`), at BATCH_LANE_CONCURRENCY 16, 4 and 32 (the batch
 *    service started again with each), with the CPU per line of every gateway process (the batch
 *    service and the PostgreSQL backends of its database included) beside the bare node:http +
 *    fetch proxy's CPU per request;
 * 2. online while a batch runs: whole completions one at a time with no batch running, beside the
 *    same while a large batch of the same key runs, beside the bare proxy: p50, p99 and the ratios;
 * 3. the online cost of the batch service configured: the cluster's edge (BATCH_SERVICE_ADDR set)
 *    beside a second edge on the same services without it, in alternating rounds, whole completions
 *    at 50 connections, with the CPU per request of every process and the ratio.
 *
 * Every line of a batch is an online request to the edge with the owner's key: what a line costs
 * beyond an online request is the batch service's work and the database's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import OpenAI, { toFile } from 'openai';
import pg from 'pg';
import { type Cluster, startSecondEdge, stopProcess } from '../tests/e2e/cluster.js';
import { cpuOf, cpuSince, fixed, numberFlag, processCpuMs, summarize, table } from './measure.js';
import { type Path, requestBody, startProxyBench, timedPost } from './proxy.bench.js';
import type { BenchSuite } from './run.js';
import { onStarted } from './started.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Part 1: the lines of each batch timed (`--lines=<n>`), and the lane's concurrency of each row (the shipped default first). */
const LANE_LINES = numberFlag('lines', { integer: true }) ?? 2_000;
const CONCURRENCIES = [16, 4, 32] as const;
/** Part 2: the batch running under the online requests, long enough to outlast them (cancelled after). */
const LARGE_LINES = 4 * LANE_LINES;
/** Part 2: online requests one at a time (`--sequential=<n>`). */
const SEQUENTIAL = numberFlag('sequential', { integer: true }) ?? 300;
const SEQUENTIAL_WARMUP = 50;
/** Part 3: alternating rounds (`--rounds=<n>`), each measure LOAD_SECONDS after WARMUP_SECONDS of the same load. */
const ROUNDS = numberFlag('rounds', { integer: true }) ?? 3;
const CONNECTIONS = 50;
const LOAD_SECONDS = 3;
const WARMUP_SECONDS = 1;
const ENDED = new Set(['completed', 'failed', 'expired', 'cancelled']);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A batch file of `count` chat completion lines for `model`, each the proxy suite's request (about 1 KiB). */
function batchFile(count: number, model: string, tag: string): Buffer {
  const body = JSON.parse(requestBody(model, false)) as Record<string, unknown>;
  let text = '';
  for (let index = 0; index < count; index++)
    text += `${JSON.stringify({ custom_id: `${tag}-${index}`, method: 'POST', url: '/v1/chat/completions', body })}\n`;
  return Buffer.from(text);
}

/**
 * The PostgreSQL backends serving the batch service's database (from pg_stat_activity, this
 * watcher's own left out), whose CPU is read from /proc. Backends come and go with the service's
 * pool: each reading lists them again.
 */
class DatabaseBackends {
  private constructor(
    private readonly client: pg.Client,
    private readonly database: string,
  ) {}

  /** Connects a watcher to the database at `url`. */
  static async connect(url: string): Promise<DatabaseBackends> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return new DatabaseBackends(client, new URL(url).pathname.slice(1));
  }

  /** CPU ms each backend of the database has used so far, by process id. */
  async cpu(): Promise<Map<number, number>> {
    const { rows } = await this.client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [
      this.database,
    ]);
    const cpu = new Map<number, number>();
    for (const { pid } of rows) {
      try {
        cpu.set(pid, processCpuMs(pid));
      } catch {
        // The backend ended between the listing and the reading.
      }
    }
    return cpu;
  }

  close(): Promise<void> {
    return this.client.end();
  }
}

/** What a measure reads the CPU of: processes by name and, where the batch service is configured, its database's backends. */
interface Processes {
  pids: Partial<Record<string, number>>;
  database?: DatabaseBackends;
}

/** A reading of every process of `Processes`. */
interface Reading {
  named: Record<string, number>;
  backends: Map<number, number>;
}

async function readCpu(processes: Processes): Promise<Reading> {
  return { named: cpuOf(processes.pids), backends: (await processes.database?.cpu()) ?? new Map() };
}

/**
 * CPU ms each process used since `before`, read once the named processes are quiet (cpuSince);
 * the database's backends summed as `postgres` (a backend started since counts from its start, one
 * that ended since is lost).
 */
async function cpuUsedSince(processes: Processes, before: Reading): Promise<Record<string, number>> {
  const used = await cpuSince(processes.pids, before.named);
  if (processes.database) {
    let postgres = 0;
    for (const [pid, ms] of await processes.database.cpu()) postgres += ms - (before.backends.get(pid) ?? 0);
    used.postgres = postgres;
  }
  return used;
}

const total = (used: Record<string, number>) => Object.values(used).reduce((sum, ms) => sum + ms, 0);
const byProcess = (used: Record<string, number>, count: number) =>
  Object.entries(used)
    .map(([name, ms]) => `${name} ${fixed(ms / Math.max(1, count), 3)}`)
    .join(', ');

/** Load at `connections` connections for LOAD_SECONDS after WARMUP_SECONDS: requests answered, failed, and the CPU used. */
async function underLoad(
  path: Path,
  processes: Processes,
  connections = CONNECTIONS,
): Promise<{ requests: number; errors: number; used: Record<string, number> }> {
  const load = {
    url: path.url.href,
    method: 'POST' as const,
    connections,
    headers: { ...path.headers, 'content-type': 'application/json' },
    body: requestBody(path.model, false),
  };
  await autocannon({ ...load, duration: WARMUP_SECONDS });
  await cpuUsedSince(processes, await readCpu(processes));
  const before = await readCpu(processes);
  const result = await autocannon({ ...load, duration: LOAD_SECONDS });
  const used = await cpuUsedSince(processes, before);
  return { requests: result.requests.total, errors: result.non2xx + result.errors + result.timeouts, used };
}

/** Whole completions one at a time, SEQUENTIAL after SEQUENTIAL_WARMUP: p50, p99 (ms) and the requests that failed (left out). */
async function oneAtATime(path: Path): Promise<ReturnType<typeof summarize> & { failed: number }> {
  const body = requestBody(path.model, false);
  const samples: number[] = [];
  let failed = 0;
  for (let index = 0; index < SEQUENTIAL_WARMUP + SEQUENTIAL; index++) {
    const timing = await timedPost(path.url, path.headers, body).catch(() => undefined);
    if (!timing) failed += 1;
    else if (index >= SEQUENTIAL_WARMUP) samples.push(timing.totalMs);
  }
  return { ...summarize(samples), failed };
}

/** The batch service of the cluster, or one started again in its place with another lane concurrency. */
interface BatchService {
  pid: number;
  concurrency: number;
  stop(): Promise<void>;
}

/** Stops `current` and starts the batch service again on its ports and database with BATCH_LANE_CONCURRENCY `concurrency`; resolves once ready. */
async function restartBatch(cluster: Cluster, current: BatchService, concurrency: number): Promise<BatchService> {
  await current.stop();
  const logs: string[] = [];
  const child: ChildProcess = spawn(process.execPath, ['services/batch/dist/main.js'], {
    cwd: ROOT,
    env: { ...cluster.env, DATABASE_URL: cluster.batchDatabaseUrl!, BATCH_LANE_CONCURRENCY: String(concurrency) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (data: Buffer) => logs.push(data.toString()));
  child.stderr!.on('data', (data: Buffer) => logs.push(data.toString()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the batch service exited with ${child.exitCode}:\n${logs.join('')}`);
    const status = await fetch(`http://127.0.0.1:${cluster.ports.batchMetrics}/readyz`).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) break;
    if (Date.now() > deadline) throw new Error(`the batch service was not ready within 60 s:\n${logs.join('')}`);
    await sleep(100);
  }
  return { pid: child.pid!, concurrency, stop: () => stopProcess(child) };
}

/** Polls the batch every 50 ms until it ends; resolves with it. */
async function untilEnded(client: OpenAI, id: string): Promise<OpenAI.Batches.Batch> {
  for (;;) {
    const batch = await client.batches.retrieve(id);
    if (ENDED.has(batch.status)) return batch;
    await sleep(50);
  }
}

/** The lines of a batch's output file whose response is not a 200. */
async function notOk(client: OpenAI, batch: OpenAI.Batches.Batch): Promise<number> {
  if (!batch.output_file_id) return batch.request_counts?.total ?? 0;
  const text = await (await client.files.content(batch.output_file_id)).text();
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .filter((line) => (JSON.parse(line) as { response?: { status_code?: number } }).response?.status_code !== 200).length;
}

export const suite: BenchSuite = {
  name: 'batch',
  description: 'lines per second through the batch lane, online latency while a batch runs, online CPU with the batch service configured',
  run: async () => {
    const began = performance.now();
    await onStarted(startProxyBench({}, { batch: true, env: { BATCH_LANE_CONCURRENCY: String(CONCURRENCIES[0]) } }), async (bench) => {
      const { cluster } = bench;
      const client = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 3 });
      const database = await DatabaseBackends.connect(cluster.batchDatabaseUrl!);
      const original = cluster.processes.batch;
      let batchService: BatchService = { pid: original.pid!, concurrency: CONCURRENCIES[0], stop: () => stopProcess(original) };
      const withoutBatch = await startSecondEdge(cluster, { BATCH_SERVICE_ADDR: '' });
      try {
        const gateway = bench.paths[2];
        const bare: Path = { ...bench.paths[1], pids: { proxy: bench.bareProxyPid } };
        const bareProcesses: Processes = { pids: { proxy: bench.bareProxyPid } };
        /** Every process of the cluster: the five services, Redis, NATS, the batch service and its database's backends. */
        const configured = (): Processes => ({ pids: { ...bench.pids, batch: batchService.pid }, database });
        const services = Object.fromEntries(Object.entries(bench.pids).filter(([name]) => name !== 'edge'));
        const unconfigured: Processes = { pids: { edge: withoutBatch.pid, ...services } };
        const withoutPath: Path = { ...gateway, url: new URL(`${withoutBatch.baseUrl}/chat/completions`), pids: unconfigured.pids };

        // The two edges as configured: the cluster's answers the Batch API, the second a 404.
        const probe = async (baseUrl: string) => (await fetch(`${baseUrl}/batches`, { headers: { authorization: `Bearer ${cluster.apiKey}` } })).status;
        const [withStatus, withoutStatus] = [await probe(cluster.baseUrl), await probe(withoutBatch.baseUrl)];
        if (withStatus !== 200 || withoutStatus !== 404)
          throw new Error(`GET /v1/batches answered ${withStatus} with the batch service and ${withoutStatus} without (200 and 404 expected)`);

        console.log(
          `${new Date().toISOString().slice(0, 10)}, unpinned; Node ${process.version}. Lines and online requests are the proxy suite's (about 1 KiB, whole completions of the catalog model on the mock); the lane polls every ${cluster.env.BATCH_POLL_INTERVAL_MS} ms while idle.\n`,
        );

        // 1. Lines per second through the lane, at each concurrency.
        const scale = await underLoad(bare, bareProcesses, CONCURRENCIES[0]);
        const bareCpu = total(scale.used) / Math.max(1, scale.requests);
        const laneRows: Array<Array<string | number>> = [];
        const laneDetails: string[] = [];
        for (const concurrency of CONCURRENCIES) {
          if (batchService.concurrency !== concurrency) batchService = await restartBatch(cluster, batchService, concurrency);
          const file = await client.files.create({
            file: await toFile(batchFile(LANE_LINES, gateway.model, `lane${concurrency}`), `lane-${concurrency}.jsonl`),
            purpose: 'batch',
          });
          const processes = configured();
          await cpuUsedSince(processes, await readCpu(processes));
          const before = await readCpu(processes);
          const started = performance.now();
          const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
          const done = await untilEnded(client, created.id);
          const seconds = (performance.now() - started) / 1000;
          const used = await cpuUsedSince(processes, before);
          const lines = done.request_counts?.completed ?? 0;
          const perLine = total(used) / Math.max(1, lines);
          laneRows.push([
            concurrency,
            done.status,
            `${lines} / ${done.request_counts?.failed ?? 0}`,
            await notOk(client, done),
            fixed(seconds, 2),
            Math.round(lines / seconds),
            fixed(perLine, 3),
            fixed((used.batch ?? 0) / Math.max(1, lines), 3),
            fixed((used.postgres ?? 0) / Math.max(1, lines), 3),
            fixed((used.edge ?? 0) / Math.max(1, lines), 3),
            fixed(perLine / bareCpu),
          ]);
          laneDetails.push(`at ${concurrency}: ${byProcess(used, lines)}`);
        }
        // The rest runs at the shipped concurrency.
        batchService = await restartBatch(cluster, batchService, CONCURRENCIES[0]);
        console.log(
          `1. A batch of ${LANE_LINES} lines, from batches.create to completed (retrieve polled every 50 ms), at each BATCH_LANE_CONCURRENCY; CPU of every gateway process (Redis, NATS, the batch service and its database's PostgreSQL backends included, the mock not) per line:\n`,
        );
        table(
          [
            'lane concurrency',
            'status',
            'completed / failed',
            'not 200',
            'seconds',
            'lines/s',
            'CPU ms per line',
            'batch service',
            'postgres',
            'edge',
            'ratio to bare proxy per request',
          ],
          laneRows,
        );
        console.log(`\nBy process, CPU ms per line: ${laneDetails.join('; ')}.`);
        console.log(
          `The bare node:http + fetch proxy at ${CONCURRENCIES[0]} connections: ${fixed(bareCpu, 3)} CPU ms per request (${Math.round(scale.requests / LOAD_SECONDS)} requests/s).\n`,
        );

        // 2. Online whole completions one at a time, with no batch, beside the bare proxy, then under a large batch of the same key.
        const idle = await oneAtATime(gateway);
        const bareTiming = await oneAtATime(bare);
        const large = await client.files.create({ file: await toFile(batchFile(LARGE_LINES, gateway.model, 'large'), 'large.jsonl'), purpose: 'batch' });
        const running = await client.batches.create({ input_file_id: large.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
        // Measured once lines are flowing.
        let first = await client.batches.retrieve(running.id);
        while ((first.request_counts?.completed ?? 0) < 100 && !ENDED.has(first.status)) {
          await sleep(50);
          first = await client.batches.retrieve(running.id);
        }
        const from = performance.now();
        const underBatch = await oneAtATime(gateway);
        const last = await client.batches.retrieve(running.id);
        const linesDuring = (last.request_counts?.completed ?? 0) - (first.request_counts?.completed ?? 0);
        const laneRate = linesDuring / ((performance.now() - from) / 1000);
        const stillRunning = last.status === 'in_progress';
        await client.batches.cancel(running.id);
        const cancelled = await untilEnded(client, running.id);
        console.log(
          `2. Online whole completions one at a time (${SEQUENTIAL} after ${SEQUENTIAL_WARMUP} to warm up), on the batch's key; the batch of ${LARGE_LINES} lines at BATCH_LANE_CONCURRENCY ${CONCURRENCIES[0]} (ms):\n`,
        );
        table(
          ['path', 'p50', 'p99', 'failed (left out)'],
          [
            ['gateway, no batch running', fixed(idle.p50), fixed(idle.p99), idle.failed],
            ['gateway, a batch of the same key running', fixed(underBatch.p50), fixed(underBatch.p99), underBatch.failed],
            ['bare node:http + fetch proxy', fixed(bareTiming.p50), fixed(bareTiming.p99), bareTiming.failed],
          ],
        );
        console.log(
          `\nUnder the batch / no batch: p50 ${fixed(underBatch.p50 / idle.p50)}, p99 ${fixed(underBatch.p99 / idle.p99)}; no batch / bare proxy: p50 ${fixed(idle.p50 / bareTiming.p50)}, p99 ${fixed(idle.p99 / bareTiming.p99)}; under the batch / bare proxy: p50 ${fixed(underBatch.p50 / bareTiming.p50)}, p99 ${fixed(underBatch.p99 / bareTiming.p99)}.`,
        );
        console.log(
          `The lane meanwhile: ${linesDuring} lines, ${Math.round(laneRate)} lines/s; the batch ${stillRunning ? 'still running at the end' : `**ended before the online requests did** (${last.status})`}, then ${cancelled.status} with ${cancelled.request_counts?.completed ?? 0} of ${LARGE_LINES} lines done.\n`,
        );
        if (!stillRunning) process.exitCode = 1;

        // 3. Online CPU per completion, no batch running: the edge with the batch service configured beside the one without.
        const legs = [
          { label: 'batch service configured (BATCH_SERVICE_ADDR set)', path: gateway, processes: configured },
          { label: 'no batch service (second edge, BATCH_SERVICE_ADDR empty)', path: withoutPath, processes: () => unconfigured },
          { label: 'bare node:http + fetch proxy', path: bare, processes: () => bareProcesses },
        ];
        const sums = legs.map(() => ({ requests: 0, errors: 0, cpuMs: 0, byProcess: {} as Record<string, number>, rounds: [] as number[] }));
        for (let round = 0; round < ROUNDS; round++)
          for (const [index, leg] of legs.entries()) {
            const result = await underLoad(leg.path, leg.processes());
            const sum = sums[index]!;
            sum.requests += result.requests;
            sum.errors += result.errors;
            sum.cpuMs += total(result.used);
            for (const [name, ms] of Object.entries(result.used)) sum.byProcess[name] = (sum.byProcess[name] ?? 0) + ms;
            sum.rounds.push(total(result.used) / Math.max(1, result.requests));
          }
        const perRequest = (index: number) => sums[index]!.cpuMs / Math.max(1, sums[index]!.requests);
        const edgeOf = (index: number) => (sums[index]!.byProcess.edge ?? 0) / Math.max(1, sums[index]!.requests);
        console.log(
          `3. Whole completions at ${CONNECTIONS} connections, ${LOAD_SECONDS} s per measure after ${WARMUP_SECONDS} s of the same load, ${ROUNDS} alternating rounds, no batch running; CPU of every gateway process (the batch service and its database's backends where configured), for the bare proxy its own:\n`,
        );
        table(
          ['path', 'requests/s', 'errors', 'CPU ms per request', 'edge CPU ms', 'ratio to no batch service', 'per round', 'edge ratio'],
          legs.map((leg, index) => {
            const sum = sums[index]!;
            const compared = index === 0;
            return [
              leg.label,
              Math.round(sum.requests / (ROUNDS * LOAD_SECONDS)),
              sum.errors,
              fixed(perRequest(index), 3),
              index === 2 ? '' : fixed(edgeOf(index), 3),
              compared ? fixed(perRequest(0) / perRequest(1)) : index === 2 ? fixed(perRequest(2) / perRequest(1)) : '',
              compared ? sum.rounds.map((value, round) => fixed(value / sums[1]!.rounds[round]!)).join(', ') : '',
              compared ? fixed(edgeOf(0) / edgeOf(1)) : '',
            ];
          }),
        );
        console.log(
          `\nBy process, CPU ms per request: configured ${byProcess(sums[0]!.byProcess, sums[0]!.requests)}; without ${byProcess(sums[1]!.byProcess, sums[1]!.requests)}.`,
        );
        console.log(`The suite took ${Math.round((performance.now() - began) / 1000)} s.\n`);
      } finally {
        await withoutBatch.stop();
        await batchService.stop();
        await database.close();
      }
    });
  },
};
