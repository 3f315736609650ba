import { existsSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AutoRouterScorer, DEFAULT_MODEL_PATH, loadAutoRouterModel } from './auto-router-model.js';
import { promptText } from './prompt-text.js';
import { DEFAULT_DATA_PATH, readRoutingRows, serializeModel } from '../training/routing-data.js';
import { trainAutoRouter } from '../training/train-auto-router.js';
import { HARD_PROMPT } from '../test/prompts.js';

/** The routing data the repository ships. */
const DATA_PATH = DEFAULT_DATA_PATH;

describe('the shipped model file', () => {
  it('is byte for byte what the training command produces from the data', { timeout: 480_000 }, () => {
    expect(existsSync(DATA_PATH), `the routing data at ${DATA_PATH}`).toBe(true);
    const { model, report } = trainAutoRouter(readRoutingRows(DATA_PATH));
    expect(serializeModel(model)).toBe(readFileSync(DEFAULT_MODEL_PATH, 'utf8'));
    // And it routes better than prompt length and random on the held-out split.
    const validation = (router: string) => report.find((line) => line.split === 'validation' && line.router === router)!;
    expect(validation('auto router').apgr).toBeGreaterThan(validation('prompt length').apgr);
    expect(validation('random').apgr).toBeCloseTo(0.5, 10);
  });

  it('stays small enough to ship', () => {
    expect(readFileSync(DEFAULT_MODEL_PATH).byteLength).toBeLessThan(2 * 1024 * 1024);
  });
});

describe('AutoRouterScorer', () => {
  const scorer = new AutoRouterScorer(loadAutoRouterModel());

  it('scores within 0..1, nothing for an empty prompt, little for small talk', () => {
    expect(scorer.score('')).toBe(0);
    for (const text of ['hi', 'Hello! How are you today?', 'thanks!']) expect(scorer.score(text), text).toBeLessThan(scorer.model.tierThresholds.standard);
    expect(scorer.score(`${HARD_PROMPT}\n`.repeat(20))).toBeLessThanOrEqual(1);
  });

  it('ranks multi-step math and code above small talk and plain writing', () => {
    const math = scorer.score(
      'A store sells pencils at 3 for $1.20 and pens at $0.85 each. Maria buys 15 pencils and 4 pens and pays with a $20 bill. How much change does she get, and how many more pencils could she buy with it?',
    );
    const code = scorer.score('Write a Python function that merges overlapping intervals in a list and returns them sorted; explain its complexity.');
    const writing = scorer.score('Write a short, friendly note thanking my neighbour for watering the plants.');
    expect(math).toBeGreaterThan(scorer.score('hi there'));
    expect(code).toBeGreaterThan(writing);
    expect(scorer.score(HARD_PROMPT)).toBeGreaterThanOrEqual(scorer.model.tierThresholds.premium);
    expect(scorer.score('Prove that there are infinitely many prime numbers.')).toBeGreaterThanOrEqual(scorer.model.tierThresholds.premium);
    // A prompt in another script is read as words, not as a one-word message.
    expect(
      scorer.score('一个商店以每支3元的价格出售铅笔，小明买了15支铅笔和4本笔记本，每本笔记本12元。他付了100元，应该找回多少钱？请一步一步地解答。'),
    ).toBeGreaterThanOrEqual(scorer.model.tierThresholds.standard);
    expect(scorer.score('Привет!')).toBeLessThan(scorer.model.tierThresholds.standard);
  });

  it('refuses a model file that does not match its features', () => {
    const folder = mkdtempSync(join(tmpdir(), 'auto-router-'));
    const path = join(folder, 'model.json');
    writeFileSync(path, JSON.stringify({ ...loadAutoRouterModel(), strong: [1, 2, 3] }));
    expect(() => loadAutoRouterModel(path)).toThrow(/does not match this scorer's features; retrain/);
  });
});

describe('promptText', () => {
  it('reads OpenAI messages as the edge reads the request: the last user message, text parts included', () => {
    expect(
      promptText([
        { role: 'system', content: 'Be brief. '.repeat(200) },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look at this chart of quarterly revenue by region:' },
            { type: 'image_url', image_url: { url: 'x' } },
          ],
        },
        { role: 'assistant', content: 'Sure.' },
        { role: 'user', content: 'Why?' },
      ]),
    ).toBe('Look at this chart of quarterly revenue by region:\nWhy?');
    expect(promptText('not messages')).toBe('');
    expect(promptText([null, { role: 'user' }, { role: 'robot', content: 'x' }])).toBe('');
    expect(promptText([{ role: 'user', content: 'x'.repeat(20_000) }])).toHaveLength(16_384);
  });
});
