/**
 * What a guardrail policy costs the whole request path: the proxy suite's cluster (its own Redis
 * and NATS, the OpenAI-compatible mock upstream, a catalog model in front of it) with the guard
 * service, measured in alternating rounds beside the code before guardrails and in three states of
 * the policies:
 *
 * - (p) the previous code: the commit before the guard's contract (or `--against=<ref>`), built
 *   once under .run/bench-previous/ and run beside this cluster with a Redis and NATS of its own,
 *   the same catalog, plans and mock (`--against=none` leaves it out);
 * - (a) no policy at all;
 * - (b) one policy, attached to another key: the bench key's requests must make no guard call;
 * - (c) the same policy attached to the bench key: the built-in checks (secrets, PII cards, a
 *   pattern list, limits) at input and output, streamed answers held back and checked window by
 *   window.
 *
 * Each round gives the CPU of every gateway process (the guard, Redis and NATS included, the mock
 * not) per whole completion under load, per stream for (a) and (c), and the guard's Check calls
 * counted on its metrics port; then the time to the first content chunk of a stream, one request
 * at a time, for (a) and (c). The figures are sums over the rounds; the per-round ratios show the
 * spread.
 */
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { metric } from '../tests/e2e/cluster.js';
import { cpuOf, cpuSince, fixed, summarize, table } from './measure.js';
import { buildPrevious, commitBefore, type PreviousBuild } from './previous.js';
import { type Path, requestBody, startProxyBench, throughput, timedPost } from './proxy.bench.js';
import type { BenchSuite } from './run.js';
import { onStarted } from './started.js';

const ROUNDS = 3;
const LOAD_SECONDS = 5;
const WARMUP_SECONDS = 1;
const SEQUENTIAL = 100;
const SEQUENTIAL_WARMUP = 20;
/** The mock's answer: 20 content chunks (a word each, 96 characters in all). */
const CONTENT_CHUNKS = 20;
/** The policy's window: 8 tokens, 32 characters, so that the 96-character answer is checked in several windows. */
const WINDOW_TOKENS = 8;
const POLICY = 'bench-guard-path';
const ADMIN_TOKEN = `bench-${randomBytes(24).toString('hex')}`;

/** The code the suite measures beside this one: `--against=<ref>`, by default the commit before the guard's contract; `--against=none` for none. */
function previousCode(): PreviousBuild | undefined {
  const flag = process.argv.find((argument) => argument.startsWith('--against='))?.slice('--against='.length);
  if (flag === 'none') return undefined;
  return buildPrevious(flag ?? commitBefore('proto/gateway/guard/v1/guard.proto'));
}

type State = 'p' | 'a' | 'b' | 'c';
/** The states measured with streams too. */
type Streamed = 'p' | 'a' | 'c';
const STATES: Record<State, string> = {
  p: '(p) the previous code',
  a: '(a) no policy',
  b: '(b) a policy on another key',
  c: '(c) built-in checks on the bench key',
};

/** The built-in checks, at input and output. */
const CHECKS = [
  { name: 'secrets', points: ['input', 'output'], action: 'mask', secrets: {} },
  { name: 'cards', points: ['input', 'output'], action: 'mask', pii: { entities: ['card'] } },
  {
    name: 'words',
    points: ['input', 'output'],
    action: 'flag',
    patterns: { words: ['ignore previous instructions', 'system prompt', 'jailbreak', 'project falcon'], patterns: ['ORDER-[0-9]{6}', '(?i)password\\s*[:=]'] },
  },
  { name: 'limits', points: ['input', 'output'], action: 'flag', limits: { max_chars: 100_000, allowed_scripts: ['Latin'] } },
];

interface Key {
  id: string;
  secret: string;
}

/** Sums of one measure over the rounds. */
interface Totals {
  requests: number;
  seconds: number;
  errors: number;
  cpuMs: number;
  guardMs: number;
  /** CPU ms by process. */
  byProcess: Record<string, number>;
  inputCalls: number;
  outputCalls: number;
  /** Each round's CPU ms per request, every process. */
  rounds: number[];
}

const emptyTotals = (): Totals => ({ requests: 0, seconds: 0, errors: 0, cpuMs: 0, guardMs: 0, byProcess: {}, inputCalls: 0, outputCalls: 0, rounds: [] });

export const suite: BenchSuite = {
  name: 'guard-path',
  description:
    'CPU per completion and per streamed chunk, and time to first token, with the code before guardrails, no policy, a policy on another key, and the built-in checks',
  run: async () => {
    // Built before the clusters start, so that the build's CPU is in no figure.
    const previous = previousCode();
    await onStarted(startProxyBench({}, { guard: true, env: { EDGE_ADMIN_TOKEN: ADMIN_TOKEN } }), async (bench) => {
      const { cluster } = bench;
      const origin = `http://127.0.0.1:${cluster.ports.edge}`;
      const guardMetrics = `http://127.0.0.1:${cluster.ports.guardMetrics}/metrics`;
      const admin = async (method: string, path: string, body?: unknown): Promise<Response> => {
        const response = await fetch(`${origin}${path}`, {
          method,
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        if (!response.ok && response.status !== 404) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
        return response;
      };
      const createKey = async (): Promise<Key> => (await (await admin('POST', '/admin/v1/keys', { plan: 'pro' })).json()) as Key;
      const [benchKey, otherKey] = [await createKey(), await createKey()];
      const pids = { ...bench.pids, guard: cluster.processes.guard.pid! };
      const gateway = bench.paths[2];
      const pathOf = (key: Key): Path => ({ ...gateway, label: 'gateway', headers: { authorization: `Bearer ${key.secret}` }, pids });
      const benchPath = pathOf(benchKey);
      // The previous code, on its bootstrap key (a Pro key, as the bench keys are).
      const previousPath = previous && (await bench.startBeside(previous.root)).path;
      const pathIn = (state: State): Path => (state === 'p' ? previousPath! : benchPath);
      const guardCalls = async () => ({
        input: await metric(guardMetrics, 'gateway_guard_calls_total', { point: 'input' }),
        output: await metric(guardMetrics, 'gateway_guard_calls_total', { point: 'output' }),
      });

      /** Guard calls one whole completion with `key` makes. */
      const callsOfOne = async (key: Key): Promise<number> => {
        const before = await guardCalls();
        // A request refused as the loaded machine's auth missed its deadline (503) is sent again.
        for (let attempt = 1; ; attempt++) {
          try {
            await timedPost(benchPath.url, pathOf(key).headers, requestBody(gateway.model, false));
            break;
          } catch (error) {
            if (attempt === 5) throw error;
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
        }
        const after = await guardCalls();
        return after.input + after.output - before.input - before.output;
      };
      /** Puts the policies of `state` and waits until the edge applies them: the bench key's requests call the guard in (c) only, the other key's in (b) only. */
      const enter = async (state: State): Promise<void> => {
        if (state === 'p') return;
        if (state === 'a') await admin('DELETE', `/admin/v1/policies/${POLICY}`);
        else
          await admin('PUT', `/admin/v1/policies/${POLICY}`, {
            attachment: { key_ids: [(state === 'c' ? benchKey : otherKey).id] },
            stream_window: { tokens: WINDOW_TOKENS },
            checks: CHECKS,
          });
        const deadline = Date.now() + 30_000;
        for (let settled = 0; settled < 3; ) {
          if (Date.now() > deadline) throw new Error(`the edge did not apply the policies of state ${state} within 30 s`);
          const benchCalls = await callsOfOne(benchKey);
          const otherCalls = await callsOfOne(otherKey);
          const applied = benchCalls > 0 === (state === 'c') && otherCalls > 0 === (state === 'b');
          settled = applied ? settled + 1 : 0;
          if (!applied) await new Promise((resolve) => setTimeout(resolve, 100));
        }
      };

      /** One measured run at 50 connections, added to `totals`. */
      const measure = async (totals: Totals, stream: boolean, path: Path): Promise<void> => {
        await autocannon({
          url: path.url.href,
          method: 'POST',
          connections: 50,
          headers: { ...path.headers, 'content-type': 'application/json' },
          body: requestBody(gateway.model, stream),
          duration: WARMUP_SECONDS,
        });
        // The warm-up's last requests are answered before the calls are read.
        await cpuSince(path.pids, cpuOf(path.pids));
        const before = await guardCalls();
        const result = await throughput(path, stream, { seconds: LOAD_SECONDS, warmupSeconds: 0 });
        const after = await guardCalls();
        const perRequest = Object.entries(result.cpuPerRequest)
          .filter(([name]) => name !== 'mock')
          .reduce((sum, [, ms]) => sum + ms, 0);
        totals.requests += result.requests;
        totals.seconds += LOAD_SECONDS;
        totals.errors += result.errors;
        totals.cpuMs += perRequest * result.requests;
        totals.guardMs += (result.cpuPerRequest.guard ?? 0) * result.requests;
        for (const [name, ms] of Object.entries(result.cpuPerRequest)) totals.byProcess[name] = (totals.byProcess[name] ?? 0) + ms * result.requests;
        totals.inputCalls += after.input - before.input;
        totals.outputCalls += after.output - before.output;
        totals.rounds.push(perRequest);
      };
      /** Time to the first content chunk of SEQUENTIAL streams, one at a time, after SEQUENTIAL_WARMUP. */
      const firstTokens = async (samples: number[], state: Streamed): Promise<void> => {
        const body = requestBody(gateway.model, true);
        const path = pathIn(state);
        for (let index = 0; index < SEQUENTIAL_WARMUP + SEQUENTIAL; index++) {
          const timing = await timedPost(path.url, path.headers, body).catch(() => undefined);
          if (!timing) failed[state] += 1;
          else if (index >= SEQUENTIAL_WARMUP) samples.push(timing.firstTokenMs);
        }
      };

      const measured: State[] = previous ? ['p', 'a', 'b', 'c'] : ['a', 'b', 'c'];
      const streamed: Streamed[] = previous ? ['p', 'a', 'c'] : ['a', 'c'];
      console.log(
        `${new Date().toISOString().slice(0, 10)}, unpinned; Node ${process.version}. ${ROUNDS} rounds, each ${measured.map((state) => `(${state})`).join(', ')} in turn; ${LOAD_SECONDS} s at 50 connections per measure after ${WARMUP_SECONDS} s of the same load; the policy's window ${WINDOW_TOKENS} tokens (${WINDOW_TOKENS * 4} characters).${previous ? ` (p): ${previous.subject}.` : ''}\n`,
      );
      const whole: Record<State, Totals> = { p: emptyTotals(), a: emptyTotals(), b: emptyTotals(), c: emptyTotals() };
      const streams: Record<Streamed, Totals> = { p: emptyTotals(), a: emptyTotals(), c: emptyTotals() };
      const first: Record<Streamed, number[]> = { p: [], a: [], c: [] };
      const failed: Record<Streamed, number> = { p: 0, a: 0, c: 0 };
      for (let round = 0; round < ROUNDS; round++) {
        for (const state of measured) {
          await enter(state);
          await measure(whole[state], false, pathIn(state));
          if (state === 'b') continue;
          await measure(streams[state], true, pathIn(state));
          await firstTokens(first[state], state);
        }
      }
      await admin('DELETE', `/admin/v1/policies/${POLICY}`);

      const perRequest = (totals: Totals) => totals.cpuMs / Math.max(1, totals.requests);
      /** What one state adds over another per request, by process (the first's processes). */
      const addedBy = (checked: Totals, plain: Totals) =>
        Object.keys(checked.byProcess)
          .filter((name) => name !== 'mock')
          .map(
            (name) =>
              `${name} ${fixed(checked.byProcess[name]! / Math.max(1, checked.requests) - (plain.byProcess[name] ?? 0) / Math.max(1, plain.requests), 3)}`,
          )
          .join(', ');
      const ratios = (totals: Totals, base: Totals) => totals.rounds.map((value, index) => fixed(value / base.rounds[index]!)).join(', ');
      /** A state's ratio to (a), or for (a) to (p): the ratio and each round's. */
      const versus = (state: State, of: Record<string, Totals>): [string, string] => {
        const base = state === 'a' ? of.p : of.a;
        if (state === 'p' || (state === 'a' && !previous)) return ['', ''];
        return [`${fixed(perRequest(of[state]!) / perRequest(base!))} (vs ${state === 'a' ? '(p)' : '(a)'})`, ratios(of[state]!, base!)];
      };
      const label = (state: State) => (state === 'p' ? `${STATES.p} (${previous!.subject.split(' ')[0]})` : STATES[state]);
      console.log(`Whole completions, every gateway process's CPU (the guard, Redis and NATS included; the mock not):\n`);
      table(
        [
          'state',
          'completions/s',
          'errors',
          'CPU ms per completion',
          'ratio',
          'per round',
          'guard CPU ms per completion',
          'guard calls per completion (input, output)',
        ],
        measured.map((state) => {
          const totals = whole[state];
          return [
            label(state),
            Math.round(totals.requests / totals.seconds),
            totals.errors,
            fixed(perRequest(totals), 3),
            ...versus(state, whole),
            fixed(totals.guardMs / Math.max(1, totals.requests), 3),
            `${fixed(totals.inputCalls / Math.max(1, totals.requests))}, ${fixed(totals.outputCalls / Math.max(1, totals.requests))}`,
          ];
        }),
      );
      console.log(
        `\n${previous ? `(a)/(p) ${fixed(perRequest(whole.a) / perRequest(whole.p))} (by process, (a) - (p), ms: ${addedBy(whole.a, whole.p)}), ` : ''}(b)/(a) ${fixed(perRequest(whole.b) / perRequest(whole.a))}, (c)/(a) ${fixed(perRequest(whole.c) / perRequest(whole.a))}; added by the checks, (c) - (a): ${fixed(perRequest(whole.c) - perRequest(whole.a), 3)} ms per completion; by process (ms): ${addedBy(whole.c, whole.a)}.\n`,
      );

      console.log(`Streams (${CONTENT_CHUNKS} content chunks, a finish and a usage chunk), every gateway process's CPU:\n`);
      table(
        ['state', 'streams/s', 'errors', 'CPU ms per stream', 'µs per content chunk', 'ratio', 'per round', 'guard calls per stream (input, output)'],
        streamed.map((state) => {
          const totals = streams[state];
          return [
            label(state),
            Math.round(totals.requests / totals.seconds),
            totals.errors,
            fixed(perRequest(totals), 3),
            fixed((perRequest(totals) * 1000) / CONTENT_CHUNKS, 1),
            ...versus(state, streams),
            `${fixed(totals.inputCalls / Math.max(1, totals.requests))}, ${fixed(totals.outputCalls / Math.max(1, totals.requests))}`,
          ];
        }),
      );
      const addedStream = perRequest(streams.c) - perRequest(streams.a);
      console.log(
        `\n${previous ? `(a)/(p) ${fixed(perRequest(streams.a) / perRequest(streams.p))} (by process, (a) - (p), ms per stream: ${addedBy(streams.a, streams.p)}); ` : ''}added by the checks, (c) - (a): ${fixed(addedStream, 3)} ms per stream, ${fixed((addedStream * 1000) / CONTENT_CHUNKS, 1)} µs per content chunk; by process (ms per stream): ${addedBy(streams.c, streams.a)}.\n`,
      );

      const times = Object.fromEntries(streamed.map((state) => [state, summarize(first[state])])) as Record<Streamed, ReturnType<typeof summarize>>;
      console.log(`Time to the first content chunk, one stream at a time, ${SEQUENTIAL} per round after ${SEQUENTIAL_WARMUP} (ms):\n`);
      table(
        ['state', 'p50', 'p99', 'streams', 'failed (left out)'],
        streamed.map((state) => [label(state), fixed(times[state].p50), fixed(times[state].p99), times[state].count, failed[state]]),
      );
      console.log(
        `\n${previous ? `(a) - (p): p50 ${fixed(times.a.p50 - times.p.p50)} ms, p99 ${fixed(times.a.p99 - times.p.p99)} ms. ` : ''}Added by the checks, (c) - (a): p50 ${fixed(times.c.p50 - times.a.p50)} ms, p99 ${fixed(times.c.p99 - times.a.p99)} ms.\n`,
      );
    });
  },
};
