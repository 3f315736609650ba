/**
 * `pnpm bench reqlog`: the request log under a steady load, and what it costs the request path.
 *
 * The proxy benchmark's cluster (its own Redis and NATS, the OpenAI-compatible mock upstream, a
 * catalog model in front of it) with the request-log service writing to a database of this run's
 * own on the machine's PostgreSQL. Load: `--rate` requests/s (1,000 by default), whole and
 * streamed completions in turn, open loop (each sent when due, up to MAX_IN_FLIGHT unanswered;
 * beyond that the generator is behind and says how many it did not send), for `--minutes` (5),
 * each request with an x-request-id of its own.
 *
 * Reported, first with the log running throughout: the rate reached and the failed requests; the
 * log's lag, sampled every second: the consumer's pending messages (pending and unacknowledged, as
 * `gateway_request_log_pending_messages` reads them) and the age of the newest logged row against
 * now (max and p99). Then `--rounds` (6) alternating rounds of `--round-seconds` (20) with the
 * request-log service stopped and running (started again and caught up before its round), with
 * the CPU time of the request path (edge, auth and executor, from /proc) per completion in each;
 * the ratio running / stopped is what the log costs the request path. Last, once the log caught
 * up: every answered request is logged, once, as completed (its x-request-id on one row), and
 * the log holds no more rows than requests sent (a request that failed before auth named its key
 * has none).
 */
import { Agent, request as httpRequest } from 'node:http';
import { connect as connectNats, type JetStreamManager } from 'nats';
import pg from 'pg';
import { createTestDatabase, natsServers } from '@gateway/testing';
import { REQUEST_LOG_DURABLE } from '../services/request-log/src/app.js';
import { stopProcess } from '../tests/e2e/cluster.js';
import { fixed, numberFlag, percentile, processCpuMs, table } from './measure.js';
import { type ProxyBench, requestBody, startProxyBench } from './proxy.bench.js';
import type { BenchSuite } from './run.js';

const REQUEST_PATH = ['edge', 'auth', 'executor'] as const;

/** The most requests in flight at once: beyond it the generator is behind and skips a request. */
const MAX_IN_FLIGHT = 1_000;

/** What a load answered. */
interface LoadResult {
  /** Requests sent, and those the schedule had due while MAX_IN_FLIGHT were still unanswered (not sent). */
  sent: number;
  skipped: number;
  /** The x-request-id of every request answered whole (a 200, and a stream to its [DONE]). */
  answered: string[];
  failed: number;
  /** How the failed requests failed (an HTTP status, a stream cut short, a socket error), with counts. */
  failures: Map<string, number>;
  seconds: number;
}

/** One POST with its own x-request-id; resolves undefined when it was answered whole, else how it failed. */
function post(bench: ProxyBench, agent: Agent, requestId: string, body: string, stream: boolean): Promise<string | undefined> {
  const gateway = bench.paths[2];
  return new Promise((resolve) => {
    const request = httpRequest(
      gateway.url,
      { method: 'POST', agent, headers: { ...gateway.headers, 'content-type': 'application/json', 'x-request-id': requestId }, timeout: 60_000 },
      (response) => {
        let tail = '';
        response.setEncoding('utf8');
        response.on('data', (part: string) => {
          tail = (tail + part).slice(-64);
        });
        response.on('end', () =>
          resolve(response.statusCode !== 200 ? `HTTP ${response.statusCode}` : stream && !tail.includes('[DONE]') ? 'stream cut short' : undefined),
        );
        response.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    request.on('timeout', () => request.destroy());
    request.end(body);
  });
}

/**
 * `rate` requests/s for `seconds`, whole and streamed in turn, open loop: each is sent when the
 * schedule has it due, whatever is still unanswered (up to MAX_IN_FLIGHT); resolves once every
 * request sent was answered, so that none is cut short and each answer can be looked for in the log.
 */
async function load(bench: ProxyBench, rate: number, seconds: number, prefix: string): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT });
  const bodies = [requestBody(bench.paths[2].model, false), requestBody(bench.paths[2].model, true)];
  const result: LoadResult = { sent: 0, skipped: 0, answered: [], failed: 0, failures: new Map(), seconds };
  const pending = new Set<Promise<void>>();
  const started = performance.now();
  for (;;) {
    const elapsed = (performance.now() - started) / 1000;
    const due = Math.floor(Math.min(elapsed, seconds) * rate);
    while (result.sent + result.skipped < due) {
      if (pending.size >= MAX_IN_FLIGHT) {
        result.skipped += 1;
        continue;
      }
      const stream = result.sent % 2 === 1;
      const requestId = `${prefix}-${result.sent}`;
      result.sent += 1;
      const one: Promise<void> = post(bench, agent, requestId, bodies[stream ? 1 : 0]!, stream).then((failure) => {
        pending.delete(one);
        if (failure === undefined) result.answered.push(requestId);
        else {
          result.failed += 1;
          result.failures.set(failure, (result.failures.get(failure) ?? 0) + 1);
        }
      });
      pending.add(one);
    }
    if (elapsed >= seconds) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await Promise.all(pending);
  agent.destroy();
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

/** The lag samples of the log: pending messages and the age of the newest row, one a second. */
function sampleLag(jsm: JetStreamManager, stream: string, database: pg.Pool): { stop(): { pending: number[]; ageMs: number[] } } {
  const pending: number[] = [];
  const ageMs: number[] = [];
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const [info, newest] = await Promise.all([
        jsm.consumers.info(stream, REQUEST_LOG_DURABLE),
        database.query<{ newest: Date | null }>('SELECT max(received_at) AS newest FROM request_log'),
      ]);
      pending.push(info.num_pending + info.num_ack_pending);
      const at = newest.rows[0]?.newest;
      if (at) ageMs.push(Date.now() - at.getTime());
    } catch {
      // A second without a sample: NATS or PostgreSQL was too busy to answer in time.
    } finally {
      busy = false;
    }
  }, 1_000);
  return {
    stop: () => {
      clearInterval(timer);
      return { pending, ageMs };
    },
  };
}

/** Resolves once the log's consumer has nothing pending, within `timeoutMs`. */
async function caughtUp(jsm: JetStreamManager, stream: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const info = await jsm.consumers.info(stream, REQUEST_LOG_DURABLE).catch(() => undefined);
    if (info && info.num_pending + info.num_ack_pending === 0) return;
    if (Date.now() > deadline) throw new Error(`the request log did not catch up within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Resolves once the service answers ready on its metrics port. */
async function ready(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await fetch(url).catch(() => undefined);
    if (answer?.ok) return;
    if (Date.now() > deadline) throw new Error(`${url} was not ready within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The request path's CPU ms (edge + auth + executor) used so far. */
function requestPathCpuMs(bench: ProxyBench): number {
  return REQUEST_PATH.reduce((sum, name) => sum + processCpuMs(bench.cluster.processes[name].pid!), 0);
}

/** One alternating round's figures. */
interface Round {
  running: boolean;
  perSecond: number;
  cpuMsPerCompletion: number;
  failed: number;
}

/** Starts the request-log service again and resolves once it is ready and has caught up. */
async function startLog(bench: ProxyBench, jsm: JetStreamManager): Promise<void> {
  const { cluster } = bench;
  cluster.restart('request-log');
  await ready(`http://127.0.0.1:${cluster.ports.requestLogMetrics}/readyz`, 60_000);
  await caughtUp(jsm, cluster.usageStream, 300_000);
}

/** Rounds with the log stopped and running in turn; the log is running again at the end. */
async function alternatingRounds(
  bench: ProxyBench,
  jsm: JetStreamManager,
  options: { rate: number; rounds: number; seconds: number },
): Promise<{ rounds: Round[]; loads: LoadResult[] }> {
  const rounds: Round[] = [];
  const loads: LoadResult[] = [];
  for (let index = 0; index < options.rounds; index += 1) {
    const running = index % 2 === 1;
    if (running) await startLog(bench, jsm);
    else await stopProcess(bench.cluster.processes['request-log']);
    const before = requestPathCpuMs(bench);
    const result = await load(bench, options.rate, options.seconds, `round${index + 1}`);
    // The answers are out; what the path does after them (settlements, usage events) is its cost too.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    rounds.push({
      running,
      perSecond: result.answered.length / result.seconds,
      cpuMsPerCompletion: (requestPathCpuMs(bench) - before) / Math.max(1, result.answered.length),
      failed: result.failed,
    });
    loads.push(result);
  }
  if (rounds.at(-1)?.running === false) await startLog(bench, jsm);
  return { rounds, loads };
}

/** How the log holds the answered requests: each once, with outcome completed. */
async function everyAnswerLogged(database: pg.Pool, loads: LoadResult[]): Promise<Array<Array<string | number>>> {
  const { rows } = await database.query<{ request_id: string; rows: number; completed: boolean }>(
    "SELECT request_id, count(*)::int AS rows, bool_and(outcome = 'completed') AS completed FROM request_log GROUP BY request_id",
  );
  const logged = new Map(rows.map((row) => [row.request_id, row]));
  const answered = loads.flatMap((result) => result.answered);
  const sent = loads.reduce((sum, result) => sum + result.sent, 0);
  const missing = answered.filter((id) => !logged.has(id)).length;
  const notCompleted = answered.filter((id) => logged.has(id) && !logged.get(id)!.completed).length;
  const twice = rows.filter((row) => row.rows > 1).length;
  const total = rows.reduce((sum, row) => sum + row.rows, 0);
  // A request that failed before auth named its key (auth unreachable: a 503) has no row.
  const verdict = missing === 0 && notCompleted === 0 && twice === 0 && total <= sent ? 'ok' : '**MISSED**';
  return [[sent, answered.length, total, missing, notCompleted, twice, verdict]];
}

/** The sustained run's lag and rate. */
async function sustainedRun(bench: ProxyBench, jsm: JetStreamManager, database: pg.Pool, rate: number, minutes: number): Promise<LoadResult> {
  const stream = bench.cluster.usageStream;
  const logPid = bench.cluster.processes['request-log'].pid!;
  const logCpuBefore = processCpuMs(logPid);
  const pathCpuBefore = requestPathCpuMs(bench);
  const lag = sampleLag(jsm, stream, database);
  const sustained = await load(bench, rate, minutes * 60, 'sustained');
  const samples = lag.stop();
  const pathCpuMs = requestPathCpuMs(bench) - pathCpuBefore;
  const drainStarted = performance.now();
  await caughtUp(jsm, stream, 300_000);
  const drainSeconds = (performance.now() - drainStarted) / 1000;
  const logCpuMs = processCpuMs(logPid) - logCpuBefore;
  const pending = [...samples.pending].sort((a, b) => a - b);
  const ages = [...samples.ageMs].sort((a, b) => a - b);
  const answered = sustained.answered.length;
  const reached = answered / sustained.seconds;
  console.log(`Sustained, ${minutes} min with the log running:\n`);
  table(
    [
      'target/s',
      'answered/s',
      'answered',
      'failed',
      'not sent (behind)',
      'pending msgs max',
      'pending p99',
      'newest row age max ms',
      'age p99 ms',
      'caught up after load s',
    ],
    [
      [
        rate,
        fixed(reached, 0),
        answered,
        sustained.failed,
        sustained.skipped,
        pending.at(-1) ?? 'n/a',
        percentile(pending, 99),
        ages.at(-1) ?? 'n/a',
        percentile(ages, 99),
        fixed(drainSeconds, 1),
      ],
    ],
  );
  console.log(
    `\nCPU ms per completion: request path (edge + auth + executor) ${fixed(pathCpuMs / Math.max(1, answered), 3)}, request-log service ${fixed(logCpuMs / Math.max(1, answered), 3)}.${reached < rate * 0.95 ? ` **The machine did not sustain ${rate}/s: it reached ${fixed(reached, 0)}/s.**` : ''}\n`,
  );
  return sustained;
}

/** Prints the alternating rounds and their ratio. */
function printRounds(rounds: Round[]): void {
  table(
    ['round', 'request log', 'answered/s', 'failed', 'request path CPU ms per completion'],
    rounds.map((round, index) => [
      index + 1,
      round.running ? 'running' : 'stopped',
      fixed(round.perSecond, 0),
      round.failed,
      fixed(round.cpuMsPerCompletion, 3),
    ]),
  );
  const of = (running: boolean) => rounds.filter((round) => round.running === running).map((round) => round.cpuMsPerCompletion);
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);
  const spread = (values: number[]) => `${fixed(Math.min(...values), 3)}-${fixed(Math.max(...values), 3)}`;
  console.log(
    `\nRequest path CPU ms per completion, mean of the rounds: log running ${fixed(mean(of(true)), 3)} (${spread(of(true))}), stopped ${fixed(mean(of(false)), 3)} (${spread(of(false))}); ratio running / stopped ${fixed(mean(of(true)) / mean(of(false)), 3)}.\n`,
  );
}

export const suite: BenchSuite = {
  name: 'reqlog',
  description: 'the request log on PostgreSQL under a steady load of whole and streamed completions: rate, lag, rows, and its cost to the request path',
  async run() {
    const rate = numberFlag('rate') ?? 1_000;
    const minutes = numberFlag('minutes') ?? 5;
    const rounds = Math.round(numberFlag('rounds') ?? 6);
    const roundSeconds = numberFlag('round-seconds') ?? 20;
    const database = await createTestDatabase('reqlog_bench');
    const bench = await startProxyBench({}, { requestLog: { databaseUrl: database.url } });
    const rows = new pg.Pool({ connectionString: database.url, max: 2 });
    const nats = await connectNats({ servers: natsServers(bench.cluster.natsUrl) });
    try {
      const jsm = await nats.jetstreamManager();
      console.log(
        `${new Date().toISOString().slice(0, 10)}: target ${rate} requests/s (whole and streamed in turn) for ${minutes} min, then ${rounds} alternating rounds of ${roundSeconds} s with the log stopped and running; PostgreSQL ${new URL(database.url).host}; Node ${process.version}.\n`,
      );
      const warm = await load(bench, Math.min(rate, 200), 5, 'warm');
      await caughtUp(jsm, bench.cluster.usageStream, 60_000);
      const sustained = await sustainedRun(bench, jsm, rows, rate, minutes);
      const alternating = await alternatingRounds(bench, jsm, { rate, rounds, seconds: roundSeconds });
      printRounds(alternating.rounds);
      await caughtUp(jsm, bench.cluster.usageStream, 300_000);
      const loads = [warm, sustained, ...alternating.loads];
      const check = await everyAnswerLogged(rows, loads);
      table(['requests sent', 'answered', 'rows', 'answered, not logged', 'answered, logged not completed', 'logged twice', 'verdict'], check);
      console.log('');
      const failures = new Map<string, number>();
      for (const result of loads) for (const [what, count] of result.failures) failures.set(what, (failures.get(what) ?? 0) + count);
      if (failures.size > 0) console.log(`\nFailed requests, by what failed: ${[...failures].map(([what, count]) => `${what} ${count}`).join(', ')}.`);
      console.log('');
      if (check[0]!.at(-1) !== 'ok' || failures.size > 0) process.exitCode = 1;
    } finally {
      await nats.close();
      await rows.end();
      await bench.stop();
      await database.drop();
    }
  },
};
