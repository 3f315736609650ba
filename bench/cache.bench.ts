/**
 * What the response cache costs and saves on the path users run: the proxy suite's cluster (its
 * own Redis and NATS, the OpenAI-compatible mock upstream, a catalog model in front of it) with the
 * cache service and its entries' Redis, measured in one run:
 *
 * 1. the cache off (a second edge on the same services with no CACHE_SERVICE_ADDR) beside the cache
 *    configured and its settings off (no target enabled: the edge's whole cost is one boolean), in
 *    alternating rounds, whole completions and streams, with the CPU of every gateway process per
 *    request and the ratio;
 * 2. the cache on (`global` enabled) and requests at temperature 0: a miss (each request a new
 *    question) beside a hit (the same question every time, kept first) and the bare node:http +
 *    fetch proxy, in alternating rounds, with the CPU per request of every gateway process (the
 *    cache and its Redis included, the mock not) under load, and one request at a time the whole
 *    answer's latency and a stream's time to its first content chunk.
 *
 * A hit is still admitted (auth), routed (router) and metered; what it saves is the executor's call
 * and the upstream's answer.
 */
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { connectRedis } from '@gateway/redis';
import { metric, startSecondEdge } from '../tests/e2e/cluster.js';
import { cpuOf, cpuSince, fixed, summarize, table } from './measure.js';
import { type Path, requestBody, startProxyBench, timedPost } from './proxy.bench.js';
import type { BenchSuite } from './run.js';
import { onStarted } from './started.js';

const CONNECTIONS = 50;
/** Part 1: alternating rounds of the cache off and disabled. */
const OFF_ROUNDS = 3;
/** Part 2: alternating rounds of miss, hit and bare proxy. */
const ON_ROUNDS = 2;
/** Each measure's seconds under load, after WARMUP_SECONDS of the same load: the suite stays under 3 minutes. */
const LOAD_SECONDS = 3;
const WARMUP_SECONDS = 1;
const SEQUENTIAL = 300;
const SEQUENTIAL_WARMUP = 50;
/** The mock's answer: 20 content chunks. */
const CONTENT_CHUNKS = 20;
const ADMIN_TOKEN = `bench-${randomBytes(24).toString('hex')}`;
/** Questions of this run only: no entry of an earlier run answers them. */
const RUN = randomBytes(4).toString('hex');

/**
 * The proxy suite's request (about 1 KiB) at temperature 0, so that the cache's default settings
 * make it cacheable, with `question` before the user's message: the same question is the same
 * cache key, whole or streamed.
 */
function cacheableBody(model: string, stream: boolean, question: string): string {
  const body = JSON.parse(requestBody(model, stream)) as { messages: Array<{ content: string }>; temperature?: number };
  body.temperature = 0;
  body.messages[1]!.content = `${question} ${body.messages[1]!.content}`;
  return JSON.stringify(body);
}

let asked = 0;
/** A question never asked before in this run: each request with it is a miss. */
const newQuestion = () => `Question ${RUN}-${++asked}:`;
const HIT_QUESTION = `Question ${RUN}-kept:`;

/** A path measured in this suite: where requests go, the processes summed, and how each request's body is made. */
interface Measured {
  label: string;
  path: Path;
  /** The body of the next request (a new question for a miss). */
  body(stream: boolean): string;
}

/** Sums of one measure over the rounds. */
interface Totals {
  requests: number;
  seconds: number;
  errors: number;
  cpuMs: number;
  byProcess: Record<string, number>;
  /** Each round's CPU ms per request. */
  rounds: number[];
  /** The edge's count of hits and misses (gateway_edge_cache_requests_total) over the measure. */
  hits: number;
  misses: number;
}

const emptyTotals = (): Totals => ({ requests: 0, seconds: 0, errors: 0, cpuMs: 0, byProcess: {}, rounds: [], hits: 0, misses: 0 });
/** One request at a time: p50, p99 and the requests that failed. */
type Timing = ReturnType<typeof summarize> & { failed: number };

const perRequest = (totals: Totals) => totals.cpuMs / Math.max(1, totals.requests);
const processPerRequest = (totals: Totals, name: string) => (totals.byProcess[name] ?? 0) / Math.max(1, totals.requests);

/** The process id of the Redis server at `url`, from its INFO. */
async function redisPid(url: string): Promise<number> {
  const redis = connectRedis(url);
  try {
    const pid = Number(/^process_id:(\d+)/m.exec(await redis.info('server'))?.[1]);
    if (!Number.isSafeInteger(pid)) throw new Error(`the Redis at ${url} did not say its process id`);
    return pid;
  } finally {
    redis.disconnect();
  }
}

/** What the response says the cache did (`gateway.cache.status`), whole or streamed; undefined when it has no `gateway.cache`. */
async function cacheStatus(measured: Measured, stream: boolean, body = measured.body(stream)): Promise<string | undefined> {
  const response = await fetch(measured.path.url, { method: 'POST', headers: { ...measured.path.headers, 'content-type': 'application/json' }, body });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${measured.label} answered ${response.status}: ${text.slice(0, 300)}`);
  return /"cache":\{"status":"(\w+)"/.exec(text)?.[1];
}

export const suite: BenchSuite = {
  name: 'cache',
  description: 'the response cache off beside configured and disabled; a miss beside a hit and the bare proxy, CPU per request and latency',
  run: async () => {
    const began = performance.now();
    await onStarted(startProxyBench({}, { cache: true, env: { EDGE_ADMIN_TOKEN: ADMIN_TOKEN } }), async (bench) => {
      const { cluster } = bench;
      const origin = `http://127.0.0.1:${cluster.ports.edge}`;
      const edgeMetrics = `http://127.0.0.1:${cluster.ports.edgeMetrics}/metrics`;
      const putGlobal = async (enabled: boolean) => {
        const response = await fetch(`${origin}/admin/v1/cache/settings/global`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ enabled }),
        });
        if (!response.ok) throw new Error(`PUT /admin/v1/cache/settings/global: ${response.status} ${await response.text()}`);
      };
      // An edge beside the cluster on its services, with the cluster's environment and no response cache.
      const withoutCache = await startSecondEdge(cluster, { CACHE_SERVICE_ADDR: '' });
      try {
        const gateway = bench.paths[2];
        const bare = bench.paths[1];
        // The cluster's services, their Redis and NATS; the cache's processes only where the edge uses them.
        const services = Object.fromEntries(Object.entries(bench.pids).filter(([name]) => name !== 'edge'));
        const cachePids = { cache: cluster.processes.cache.pid!, 'cache redis': await redisPid(cluster.cacheRedisUrl!) };
        const cached: Path = { ...gateway, pids: { ...bench.pids, ...cachePids } };
        const uncached: Path = {
          ...gateway,
          url: new URL(`${withoutCache.origin}/v1/chat/completions`),
          pids: { edge: withoutCache.pid, ...services },
        };
        const same = (stream: boolean) => cacheableBody(gateway.model, stream, HIT_QUESTION);
        const off: Measured = { label: 'cache off (no CACHE_SERVICE_ADDR)', path: uncached, body: same };
        const disabled: Measured = { label: 'cache configured, settings off', path: cached, body: same };
        const miss: Measured = {
          label: 'miss (a new question each request)',
          path: cached,
          body: (stream) => cacheableBody(gateway.model, stream, newQuestion()),
        };
        const hit: Measured = { label: 'hit (the same question, kept)', path: cached, body: same };
        const bareProxy: Measured = { label: 'bare node:http + fetch proxy', path: { ...bare, pids: { proxy: bench.bareProxyPid } }, body: same };

        /** Waits until three probes in a row get `expected` from the cache (undefined: no gateway.cache at all). */
        const settled = async (probe: Measured, expected: string | undefined): Promise<void> => {
          const deadline = Date.now() + 30_000;
          for (let inRow = 0; inRow < 3; ) {
            if (Date.now() > deadline) throw new Error(`${probe.label}: the cache did not answer ${expected ?? 'nothing'} within 30 s`);
            const ok = (await cacheStatus(probe, false)) === expected && (await cacheStatus(probe, true)) === expected;
            inRow = ok ? inRow + 1 : 0;
            if (!ok) await new Promise((resolve) => setTimeout(resolve, 100));
          }
        };
        const cacheCounts = async () => ({
          hits: await metric(edgeMetrics, 'gateway_edge_cache_requests_total', { status: 'hit' }),
          misses: await metric(edgeMetrics, 'gateway_edge_cache_requests_total', { status: 'miss' }),
        });

        /** CONNECTIONS connections for LOAD_SECONDS after WARMUP_SECONDS of the same load, added to `totals`. */
        const measure = async (totals: Totals, measured: Measured, stream: boolean): Promise<void> => {
          const { path } = measured;
          const load = {
            url: path.url.href,
            connections: CONNECTIONS,
            requests: [
              {
                method: 'POST' as const,
                headers: { ...path.headers, 'content-type': 'application/json' },
                setupRequest: (request: autocannon.Request) => ({ ...request, body: measured.body(stream) }),
              },
            ],
          };
          await autocannon({ ...load, duration: WARMUP_SECONDS });
          await cpuSince(path.pids, cpuOf(path.pids));
          const countsBefore = await cacheCounts();
          const before = cpuOf(path.pids);
          const result = await autocannon({ ...load, duration: LOAD_SECONDS });
          const used = await cpuSince(path.pids, before);
          const countsAfter = await cacheCounts();
          const requests = result.requests.total;
          const gatewayMs = Object.values(used).reduce((sum, ms) => sum + ms, 0);
          totals.requests += requests;
          totals.seconds += LOAD_SECONDS;
          totals.errors += result.non2xx + result.errors + result.timeouts;
          totals.cpuMs += gatewayMs;
          for (const [name, ms] of Object.entries(used)) totals.byProcess[name] = (totals.byProcess[name] ?? 0) + ms;
          totals.rounds.push(gatewayMs / Math.max(1, requests));
          totals.hits += countsAfter.hits - countsBefore.hits;
          totals.misses += countsAfter.misses - countsBefore.misses;
        };
        /** One request at a time: the whole answer's latency, or a stream's time to its first content chunk, SEQUENTIAL after SEQUENTIAL_WARMUP. */
        const reasons = new Set<string>();
        const oneAtATime = async (measured: Measured, stream: boolean): Promise<Timing> => {
          const samples: number[] = [];
          let failed = 0;
          for (let index = 0; index < SEQUENTIAL_WARMUP + SEQUENTIAL; index++) {
            // A request refused because the loaded machine's auth missed its deadline (503) is counted and left out.
            const timing = await timedPost(measured.path.url, measured.path.headers, measured.body(stream)).catch((error: Error) => {
              reasons.add(`${measured.label}: ${error.message.replace(/^\S+ /, '').slice(0, 200)}`);
              return undefined;
            });
            if (!timing) failed += 1;
            else if (index >= SEQUENTIAL_WARMUP) samples.push(stream ? timing.firstTokenMs : timing.totalMs);
          }
          return { ...summarize(samples), failed };
        };

        console.log(
          `${new Date().toISOString().slice(0, 10)}, unpinned; Node ${process.version}. ${CONNECTIONS} connections, ${LOAD_SECONDS} s per measure after ${WARMUP_SECONDS} s of the same load; requests of about 1 KiB at temperature 0, the mock's answer ${CONTENT_CHUNKS} chunks.\n`,
        );

        // 1. The cache off beside the cache configured with its settings off.
        await putGlobal(false);
        await settled(disabled, undefined);
        const offTotals = { off: [emptyTotals(), emptyTotals()], disabled: [emptyTotals(), emptyTotals()] };
        for (let round = 0; round < OFF_ROUNDS; round++)
          for (const [index, stream] of [false, true].entries()) {
            await measure(offTotals.off[index]!, off, stream);
            await measure(offTotals.disabled[index]!, disabled, stream);
          }
        console.log(
          `The cache off (a second edge on the same services, no CACHE_SERVICE_ADDR) and the cache configured with every target's settings off, ${OFF_ROUNDS} alternating rounds; CPU of every gateway process (the cache's and its Redis's where configured; the mock not):\n`,
        );
        table(
          ['answer', 'state', 'requests/s', 'errors', 'CPU ms per request', 'edge CPU ms', 'ratio to off', 'per round', 'edge ratio'],
          [false, true].flatMap((stream, index) =>
            (['off', 'disabled'] as const).map((state) => {
              const totals = offTotals[state][index]!;
              const base = offTotals.off[index]!;
              return [
                stream ? 'stream' : 'whole',
                state === 'off' ? off.label : disabled.label,
                Math.round(totals.requests / totals.seconds),
                totals.errors,
                fixed(perRequest(totals), 3),
                fixed(processPerRequest(totals, 'edge'), 3),
                state === 'off' ? '' : fixed(perRequest(totals) / perRequest(base)),
                state === 'off' ? '' : totals.rounds.map((value, round) => fixed(value / base.rounds[round]!)).join(', '),
                state === 'off' ? '' : fixed(processPerRequest(totals, 'edge') / processPerRequest(base, 'edge')),
              ];
            }),
          ),
        );
        const cacheShare = (totals: Totals) =>
          Object.keys(cachePids)
            .map((name) => `${name} ${fixed(processPerRequest(totals, name), 3)}`)
            .join(', ');
        console.log(
          `\nThe cache's processes while its settings are off, CPU ms per request: whole ${cacheShare(offTotals.disabled[0]!)}; stream ${cacheShare(offTotals.disabled[1]!)}.\n`,
        );

        // 2. The cache on: a miss, a hit, the bare proxy.
        await putGlobal(true);
        await settled(miss, 'miss');
        for (const stream of [false, true]) {
          // The first asks the model and keeps its answer, the next is a hit once the store is done.
          await cacheStatus(hit, stream);
          await settled(hit, 'hit');
        }
        const onPaths = [miss, hit, bareProxy];
        const onTotals = onPaths.map(() => [emptyTotals(), emptyTotals()]);
        for (let round = 0; round < ON_ROUNDS; round++)
          for (const [index, stream] of [false, true].entries())
            for (const [pathIndex, measured] of onPaths.entries()) await measure(onTotals[pathIndex]![index]!, measured, stream);
        const latency: Array<{ whole: Timing; first: Timing }> = [];
        for (const measured of onPaths) latency.push({ whole: await oneAtATime(measured, false), first: await oneAtATime(measured, true) });
        const hitShare = (totals: Totals) => (totals.hits + totals.misses === 0 ? '' : `${fixed((100 * totals.hits) / (totals.hits + totals.misses), 1)}%`);
        console.log(
          `The cache on (\`global\` enabled), ${ON_ROUNDS} alternating rounds; CPU of every gateway process (the cache and its Redis included, the mock not), for the bare proxy its own; "hits" is the edge's count (gateway_edge_cache_requests_total) over the measure:\n`,
        );
        table(
          ['path', 'completions/s', 'CPU ms per completion', 'hits', 'streams/s', 'CPU ms per stream', 'hits', 'errors'],
          onPaths.map((measured, pathIndex) => {
            const [whole, streamed] = onTotals[pathIndex] as [Totals, Totals];
            return [
              measured.label,
              Math.round(whole.requests / whole.seconds),
              fixed(perRequest(whole), 3),
              hitShare(whole),
              Math.round(streamed.requests / streamed.seconds),
              fixed(perRequest(streamed), 3),
              hitShare(streamed),
              whole.errors + streamed.errors,
            ];
          }),
        );
        const [missTotals, hitTotals, bareTotals] = onTotals as [[Totals, Totals], [Totals, Totals], [Totals, Totals]];
        const ratio = (one: Totals, other: Totals) => fixed(perRequest(one) / perRequest(other));
        const rounds = (one: Totals, other: Totals) => one.rounds.map((value, round) => fixed(value / other.rounds[round]!)).join(', ');
        const byProcess = (totals: Totals) =>
          Object.keys(totals.byProcess)
            .map((name) => `${name} ${fixed(processPerRequest(totals, name), 3)}`)
            .join(', ');
        console.log(
          `\nCPU hit/miss: whole ${ratio(hitTotals[0], missTotals[0])} (rounds ${rounds(hitTotals[0], missTotals[0])}), stream ${ratio(hitTotals[1], missTotals[1])} (rounds ${rounds(hitTotals[1], missTotals[1])}); hit/bare proxy: whole ${ratio(hitTotals[0], bareTotals[0])}, stream ${ratio(hitTotals[1], bareTotals[1])}; miss/bare proxy: whole ${ratio(missTotals[0], bareTotals[0])}, stream ${ratio(missTotals[1], bareTotals[1])}.`,
        );
        console.log(`By process, CPU ms per completion: miss ${byProcess(missTotals[0])}; hit ${byProcess(hitTotals[0])}.`);
        console.log(`By process, CPU ms per stream: miss ${byProcess(missTotals[1])}; hit ${byProcess(hitTotals[1])}.\n`);

        console.log(`One request at a time, ${SEQUENTIAL} each after ${SEQUENTIAL_WARMUP} to warm up (ms):\n`);
        table(
          ['path', 'whole p50', 'whole p99', 'stream first content chunk p50', 'first content chunk p99', 'failed (left out)'],
          latency.map(({ whole, first }, pathIndex) => [
            onPaths[pathIndex]!.label,
            fixed(whole.p50),
            fixed(whole.p99),
            fixed(first.p50),
            fixed(first.p99),
            whole.failed + first.failed,
          ]),
        );
        if (reasons.size > 0) {
          console.log(`\nFailed one at a time (first of each kind): ${[...reasons].slice(0, 4).join('; ')}.`);
          // What the edge logged of them: why auth could not decide.
          const logged = new Set(
            cluster.logs.edge
              .join('')
              .split('\n')
              .filter((line) => line.includes('auth could not decide'))
              .map((line) => /"reason":"([^"]*)"/.exec(line)?.[1] ?? line.slice(0, 200)),
          );
          console.log(`The edge's reasons: ${[...logged].join(', ') || 'none logged'}.`);
        }
        const [missLatency, hitLatency, bareLatency] = latency as [(typeof latency)[number], (typeof latency)[number], (typeof latency)[number]];
        const p50 = (one: Timing, other: Timing) => fixed(one.p50 / other.p50);
        console.log(
          `\np50 hit/miss: whole ${p50(hitLatency.whole, missLatency.whole)}, first content chunk ${p50(hitLatency.first, missLatency.first)}; hit/bare proxy: whole ${p50(hitLatency.whole, bareLatency.whole)}, first content chunk ${p50(hitLatency.first, bareLatency.first)}. The suite took ${Math.round((performance.now() - began) / 1000)} s.\n`,
        );
        await putGlobal(false);
      } finally {
        await withoutCache.stop();
      }
    });
  },
};
