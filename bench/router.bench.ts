/**
 * The cost of an `auto` decision: the scorer alone (features and the two linear models),
 * and a whole Route call over gRPC to a router process (the built service), for a short and a long
 * prompt, beside a Route call that names its model (no scoring) as the baseline. The issue asks
 * for a decision well under a millisecond. Then the prompt features of each hostile 16K prompt
 * (services/router/src/testing/hostile-prompts.ts) against 16K of prose: linear time, a missed
 * ratio flagged and making `pnpm bench` exit non-zero.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { callUnary, createClient, createHealthClient, isServing } from '@gateway/grpc';
import { loadGatewayGrpc, type RouteRequest, type RouteResponseOutput } from '@gateway/proto';
import { eventually } from '@gateway/testing';
import { AutoRouterScorer, loadAutoRouterModel } from '../services/router/src/auto-router-model.js';
import { promptFeatures } from '../services/router/src/prompt-features.js';
import { HOSTILE_PROMPT_LENGTH, HOSTILE_PROMPTS } from '../services/router/src/testing/hostile-prompts.js';
import { freePort, stopProcess } from '../tests/e2e/cluster.js';
import type { BenchSuite } from './run.js';
import { fixed, summarize, table, timeSequential } from './measure.js';

const SHORT = 'What is the capital of Australia, and why is it not Sydney?';
const PARAGRAPH =
  'A store sells pencils at 3 for $1.20 and pens at $0.85 each. Maria buys 15 pencils and 4 pens, pays with a $20 bill, and asks how much change she gets. ';
/** About 16k characters: the most the edge sends. */
const LONG = `${PARAGRAPH.repeat(Math.ceil(16_384 / PARAGRAPH.length))}`.slice(0, 16_384);

/** Times a synchronous function `count` times after `warmup` runs; each sample in ms. */
function timeSync(count: number, warmup: number, task: () => unknown): number[] {
  for (let i = 0; i < warmup; i += 1) task();
  const samples: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const start = performance.now();
    task();
    samples.push(performance.now() - start);
  }
  return samples;
}

/**
 * Most a hostile 16K prompt's features may cost, in feature extractions of 16K of prose (about
 * 0.3 ms): every hostile prompt costs 0.4 to 3.3 times that, the line breaks that a quadratic
 * pattern once made cost 90 ms a call about 300 times. (The unit test's bound was 20 ms a call.)
 */
const HOSTILE_FEATURES_RATIO = 20;

/** promptFeatures of each hostile prompt against 16K of prose, per call; true when a target was missed. */
function hostileFeatureRows(): boolean {
  const perCall = (text: string) => Math.min(...[0, 1, 2].map(() => summarize(timeSync(10, 2, () => promptFeatures(text))).mean));
  const prose = perCall(LONG);
  let missedAny = false;
  const rows = Object.entries(HOSTILE_PROMPTS).map(([name, text]) => {
    const milliseconds = perCall(text);
    const missed = milliseconds / prose > HOSTILE_FEATURES_RATIO;
    missedAny ||= missed;
    return [name.replaceAll('|', '\\|'), fixed(milliseconds, 3), fixed(milliseconds / prose), `≤ ${HOSTILE_FEATURES_RATIO}`, missed ? '**MISSED**' : 'ok'];
  });
  console.log(`\npromptFeatures of ${HOSTILE_PROMPT_LENGTH} characters, per call (16K of prose: ${fixed(prose, 3)} ms):\n`);
  table(['text', 'ms', '×prose', 'target', 'verdict'], rows);
  return missedAny;
}

export const suite: BenchSuite = {
  name: 'router',
  description: '`auto` decision latency: the scorer alone and a Route call over gRPC (short and long prompts); prompt features of hostile text',
  async run() {
    const scorer = new AutoRouterScorer(loadAutoRouterModel());
    const rows: Array<Array<string | number>> = [];
    for (const [label, text] of [
      ['short', SHORT],
      ['long (16k chars)', LONG],
    ] as const) {
      const stats = summarize(timeSync(20_000, 2_000, () => scorer.score(text)));
      rows.push([`scorer alone, ${label} prompt`, fixed(stats.p50, 4), fixed(stats.p99, 4), fixed(stats.mean, 4)]);
    }

    const [port, metricsPort] = [await freePort(), await freePort()];
    const router = spawn(process.execPath, ['services/router/dist/main.js'], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      // Only the simulated models: no provider key reaches the benchmark's router.
      env: {
        PATH: process.env.PATH ?? '',
        LOG_LEVEL: 'warn',
        ROUTER_LISTEN_ADDR: `127.0.0.1:${port}`,
        ROUTER_METRICS_PORT: String(metricsPort),
        NATS_URL: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const health = createHealthClient(`127.0.0.1:${port}`);
    await eventually(
      () =>
        isServing(health).then(
          (serving) => serving || undefined,
          () => undefined,
        ),
      'the router to serve',
      20_000,
      100,
    );
    health.close();
    const client = createClient(loadGatewayGrpc().gateway.router.v1.RouterService, `127.0.0.1:${port}`);
    const route = (request: RouteRequest) => () => callUnary<RouteRequest, RouteResponseOutput>(client, client.Route, request, { deadlineMs: 5_000 });
    try {
      const explicit = summarize(await timeSequential(3_000, 500, route({ model: 'sim-standard', traits: { prompt_tokens: 20 } })));
      rows.push(['Route over gRPC, explicit model (baseline)', fixed(explicit.p50, 4), fixed(explicit.p99, 4), fixed(explicit.mean, 4)]);
      const autoP50: number[] = [];
      for (const [label, text] of [
        ['short', SHORT],
        ['long (16k chars)', LONG],
      ] as const) {
        const stats = summarize(
          await timeSequential(3_000, 500, route({ model: 'auto', prompt_text: text, traits: { prompt_tokens: Math.ceil(text.length / 4) } })),
        );
        autoP50.push(stats.p50);
        rows.push([`Route over gRPC, auto, ${label} prompt`, fixed(stats.p50, 4), fixed(stats.p99, 4), fixed(stats.mean, 4)]);
      }
      console.log('Latency of one decision, one at a time (ms):\n');
      table(['what', 'p50', 'p99', 'mean'], rows);
      console.log(
        `\nauto over explicit at p50: short ${fixed(autoP50[0]! / explicit.p50)}x, long ${fixed(autoP50[1]! / explicit.p50)}x (the gRPC round trip dominates; the scorer adds the difference).`,
      );
    } finally {
      client.close();
      await stopProcess(router);
    }
    if (hostileFeatureRows()) {
      console.log('\nA target was missed (see **MISSED** above).');
      process.exitCode = 1;
    }
  },
};
