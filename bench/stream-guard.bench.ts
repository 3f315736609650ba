/**
 * The stream hold-back of output guardrails (services/edge/src/guardrails/stream-hold-back.ts): the
 * CPU it adds per streamed chunk, with a local check that answers at once (the fake stream check,
 * which holds back tails as the guard does), against relaying the same chunks untouched. 20,000
 * chat chunks of 4 characters each, in windows of 64 tokens (256 characters), best of five runs;
 * the guard's own time (its gRPC call, its checks) is not part of it.
 */
import { StreamHoldBack } from '../services/edge/src/guardrails/stream-hold-back.js';
import { fakeStreamCheck } from '../services/edge/src/testing/fake-stream-check.js';
import { fixed, table } from './measure.js';
import type { BenchSuite } from './run.js';

const CHUNKS = 20_000;
const RUNS = 5;

/** The executor's chunks of one answer: a role chunk, 4-character content chunks, the finish. */
function chunks(): string[] {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'sim',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
  const out = [chunk({ role: 'assistant', content: '' })];
  for (let index = 0; index < CHUNKS; index++) out.push(chunk({ content: `w${String(index % 1000).padStart(3, '0')}` }));
  out.push(chunk({}, 'stop'));
  return out;
}

/** CPU microseconds (user + system) of one pass of `work`, the best of RUNS. */
async function bestCpu(work: () => Promise<void>): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < RUNS; run++) {
    const start = process.cpuUsage();
    await work();
    const used = process.cpuUsage(start);
    best = Math.min(best, used.user + used.system);
  }
  return best;
}

export const suite: BenchSuite = {
  name: 'stream-guard',
  description: 'CPU the stream hold-back adds per streamed chunk (local check answering at once)',
  async run() {
    const input = chunks();
    let sink = 0;
    const plain = await bestCpu(async () => {
      for (const json of input) sink += json.length;
    });
    const held = await bestCpu(async () => {
      const { check } = fakeStreamCheck('mask');
      const holdBack = new StreamHoldBack({
        window: { tokens: 64, ms: 10_000 },
        check,
        emit: (json) => {
          sink += json.length;
        },
        blocked: () => undefined,
      });
      for (const json of input) await holdBack.push(json);
      await holdBack.finish();
    });
    const check = await bestCpu(async () => {
      const { check: fake } = fakeStreamCheck('mask');
      // The fake check's own share: the same windows checked without the hold-back around them.
      for (let at = 0; at < CHUNKS; at += 64) await fake([{ path: 'choices[0].delta.content', text: 'w000'.repeat(64) }], false);
    });
    const perChunk = (held - plain - check) / CHUNKS;
    table(
      ['measure', 'value'],
      [
        ['chunks', String(CHUNKS)],
        ['relayed untouched, µs CPU per chunk', fixed(plain / CHUNKS, 3)],
        ['through the hold-back, µs CPU per chunk (check included)', fixed(held / CHUNKS, 3)],
        ['the fake check alone, µs CPU per chunk', fixed(check / CHUNKS, 3)],
        ['added by the hold-back, µs CPU per chunk', fixed(perChunk, 3)],
      ],
    );
    if (sink < 0) console.log(sink);
  },
};
