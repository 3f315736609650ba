/**
 * The token counter on hostile text: for each 1 MB text of packages/tokens' tests (one letter,
 * emoji, CJK, random code points...), the time of a whole count, of cutting it into token pieces
 * and of a count refused past 200,000 tokens, each per MB and as a ratio to counting 1 MB of
 * English prose in the same run, and the longest the event loop waits during a time-sliced count.
 * Then a 16 MB prompt counted against a small limit (beside a 64 KB one) and a request of 5,000
 * messages. Prints a table; a missed target is flagged and makes `pnpm bench` exit non-zero.
 *
 * The targets were absolute bounds in the unit tests (1 s a MB, 6 s for text that misses the
 * tokenizer's cache; 50 ms of event-loop gap; 100 ms for a 16 MB prompt over a small limit; 1 s for
 * 5,000 messages), set where 1 MB of prose counts in about 30 ms: here, ratios to that baseline.
 */
import {
  countPromptTokens,
  countPromptTokensAsync,
  countPromptTokensWithin,
  countTextTokens,
  countTextTokensAsync,
  tokenPieces,
} from '../packages/tokens/src/index.js';
import { COSTLY_PER_CHARACTER, HOSTILE, longConversation, MEGABYTE, prose, request } from '../packages/tokens/src/testing/hostile-texts.js';
import { fixed, table } from './measure.js';
import type { BenchSuite } from './run.js';

/** Most a text may cost a MB, in counts of 1 MB of prose: 1 s over about 30 ms. */
const LINEAR_RATIO = 30;
/** The same for text whose every piece misses the tokenizer's cache: 6 s over about 30 ms. */
const COSTLY_RATIO = 200;
/** The longest event-loop gap of a time-sliced count, in ms (ten slices of SLICE_MILLISECONDS). */
const MAX_LOOP_GAP_MS = 50;
/** A 16 MB prompt over a small limit costs at most this many times a 64 KB one over the same limit: both stop at the same segment. */
const HUGE_OVER_SMALL_RATIO = 10;
/** 5,000 messages (about 1 MB) cost at most this many counts of 1 MB of prose (1 s over about 30 ms). */
const CONVERSATION_RATIO = 30;

/** The best of `runs` timings of `work`, in ms: the least disturbed by the machine's other work. */
function best(runs: number, work: () => unknown): number {
  let fastest = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run += 1) {
    const start = performance.now();
    work();
    fastest = Math.min(fastest, performance.now() - start);
  }
  return fastest;
}

/** The longest the event loop went without a turn (probed by a 1 ms interval) while `work` ran, in ms. */
async function longestLoopGap(work: () => Promise<unknown>): Promise<number> {
  let longest = 0;
  let last = performance.now();
  const probe = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  try {
    await work();
  } finally {
    clearInterval(probe);
  }
  return Math.max(longest, performance.now() - last);
}

/** A cell that says whether a measure met its target. */
const verdict = (missed: string[]) => (missed.length === 0 ? 'ok' : `**MISSED** ${missed.join(', ')}`);

export const suite: BenchSuite = {
  name: 'tokens',
  description: 'token counting of 1 MB of hostile text, against 1 MB of prose counted in the same run',
  async run() {
    const plain = prose(MEGABYTE, 1);
    countTextTokens(plain);
    const baseline = best(3, () => countTextTokens(plain));
    console.log(`Baseline: 1 MB of English prose counts in ${fixed(baseline, 1)} ms.\n`);
    let missedAny = false;

    const rows: Array<Array<string | number>> = [];
    for (const [name, text] of Object.entries(HOSTILE)) {
      const megabytes = text.length / MEGABYTE;
      const count = best(2, () => countTextTokens(text)) / megabytes;
      const pieces = best(1, () => tokenPieces(text)) / megabytes;
      const prompt = request(text);
      const refused = best(1, () => countPromptTokensWithin(prompt, 200_000)) / megabytes;
      const gap = await longestLoopGap(() => countTextTokensAsync(text));
      const target = COSTLY_PER_CHARACTER.has(name) ? COSTLY_RATIO : LINEAR_RATIO;
      const missed = [
        ...(count / baseline > target ? ['count'] : []),
        ...(pieces / baseline > target ? ['pieces'] : []),
        ...(refused / baseline > LINEAR_RATIO ? ['refused'] : []),
        ...(gap > MAX_LOOP_GAP_MS ? ['loop gap'] : []),
      ];
      missedAny ||= missed.length > 0;
      rows.push([
        name,
        fixed(count, 0),
        fixed(count / baseline),
        fixed(pieces / baseline),
        fixed(refused / baseline),
        `≤ ${target}`,
        fixed(gap, 1),
        verdict(missed),
      ]);
    }
    table(['1 MB of', 'count ms/MB', 'count ×prose', 'pieces ×prose', 'refused at 200k ×prose', 'target ×prose', 'sliced loop gap ms', 'verdict'], rows);

    const huge = request(prose(16 * MEGABYTE, 1));
    const small = request(prose(64 * 1_024, 1));
    const hugeMs = best(5, () => countPromptTokensWithin(huge, 1_000));
    const smallMs = best(5, () => countPromptTokensWithin(small, 1_000));
    const conversation = longConversation();
    const conversationMs = best(2, () => countPromptTokens(conversation));
    const conversationRefusedMs = best(2, () => countPromptTokensWithin(conversation, 20_000));
    const conversationGap = await longestLoopGap(() => countPromptTokensAsync(conversation));
    const others: Array<{ row: Array<string | number>; missed: string[] }> = [
      {
        row: ['16 MB prompt over a limit of 1,000, ×64 KB prompt', fixed(hugeMs, 2), fixed(hugeMs / smallMs), `≤ ${HUGE_OVER_SMALL_RATIO}`, 'n/a'],
        missed: hugeMs / smallMs > HUGE_OVER_SMALL_RATIO ? ['ratio'] : [],
      },
      {
        row: [
          '5,000 messages counted, ×1 MB prose',
          fixed(conversationMs, 1),
          fixed(conversationMs / baseline),
          `≤ ${CONVERSATION_RATIO}`,
          fixed(conversationGap, 1),
        ],
        missed: [...(conversationMs / baseline > CONVERSATION_RATIO ? ['ratio'] : []), ...(conversationGap > MAX_LOOP_GAP_MS ? ['loop gap'] : [])],
      },
      {
        row: [
          '5,000 messages refused past 20,000 tokens, ×counted',
          fixed(conversationRefusedMs, 1),
          fixed(conversationRefusedMs / conversationMs),
          '< 1',
          'n/a',
        ],
        missed: conversationRefusedMs >= conversationMs ? ['ratio'] : [],
      },
    ];
    console.log('');
    table(
      ['prompt', 'ms', 'ratio', 'target', 'sliced loop gap ms', 'verdict'],
      others.map(({ row, missed }) => [...row, verdict(missed)]),
    );
    missedAny ||= others.some(({ missed }) => missed.length > 0);
    if (missedAny) {
      console.log('\nA target was missed (see **MISSED** above).');
      process.exitCode = 1;
    }
  },
};
