/**
 * The simulated provider against hostile requests (packages/testing/src/hostile-requests.ts):
 * each once took from seconds to hours. Each is timed beside a baseline in the same run (counting
 * its own prompt's tokens, the work no answer can skip; for the echoed const, counting the const it
 * must not tokenize whole), and reported as a ratio to it; a ratio over its target fails the suite. The unit tests check what these requests are answered, never how fast.
 */
import type { ChatRequestOutput } from '@gateway/proto';
import { countPromptTokens, countTextTokens } from '@gateway/tokens';
import { SimulatedProvider } from '../services/executor/src/providers/simulated/simulated-provider.js';
import { simulatedModel, ECHOED_CONST, HOSTILE_REQUESTS } from '@gateway/testing';
import { fixed, summarize, table, timeSequential } from './measure.js';
import type { BenchSuite } from './run.js';

const RUNS = 5;

type HostileRequest = keyof typeof HOSTILE_REQUESTS;

/**
 * What each request is timed beside, and the most it may take as a multiple of that: with
 * headroom over what was measured (2026-11-25, 2-core machine), and far under the regressions they
 * guard against (the 128 choices once hashed the prompt per choice, about 5 times the count; the
 * const was once tokenized whole, about 1 times the baseline).
 */
const BASELINES: Record<HostileRequest, { what: string; work: (request: ChatRequestOutput) => unknown; target: number }> = {
  oneMegabyteWord: { what: 'counting its prompt', work: countPromptTokens, target: 4 },
  echoedConst: { what: 'counting the 1 MB const', work: () => countTextTokens(JSON.stringify(ECHOED_CONST)), target: 0.8 },
  toolsAgainstMegabytes: { what: 'counting its prompt', work: countPromptTokens, target: 6 },
  manyChoicesOfFourMegabytes: { what: 'counting its prompt', work: countPromptTokens, target: 3 },
};

async function measure(name: HostileRequest, provider: SimulatedProvider) {
  const request: ChatRequestOutput = HOSTILE_REQUESTS[name]();
  const context = { model: simulatedModel(), signal: new AbortController().signal, requestId: 'bench' };
  const answer = summarize(await timeSequential(RUNS, 1, () => provider.complete(request, context)));
  const baseline = summarize(await timeSequential(RUNS, 1, async () => BASELINES[name].work(request)));
  return { answerMs: answer.p50, baselineMs: baseline.p50, ratio: answer.p50 / Math.max(baseline.p50, 0.001) };
}

export const suite: BenchSuite = {
  name: 'simulated',
  description: 'the simulated provider on hostile requests, as a ratio to counting their prompts',
  async run() {
    const provider = new SimulatedProvider();
    const rows: Array<Array<string | number>> = [];
    const missed: string[] = [];
    for (const name of Object.keys(HOSTILE_REQUESTS) as HostileRequest[]) {
      const { answerMs, baselineMs, ratio } = await measure(name, provider);
      const { what, target } = BASELINES[name];
      if (ratio > target) missed.push(name);
      rows.push([name, fixed(answerMs, 1), what, fixed(baselineMs, 1), fixed(ratio), `≤ ${target}`, ratio > target ? 'MISSED' : 'ok']);
    }
    table(['request', 'answer ms (p50)', 'baseline', 'baseline ms (p50)', 'ratio', 'target', ''], rows);
    if (missed.length > 0) {
      console.error(`over target: ${missed.join(', ')}`);
      process.exitCode = 1;
    }
  },
};
