import { describe, expect, it } from 'vitest';
import { routingQuality, type ScoredOutcome } from './routing-quality.js';

/** Four prompts: one only the strong model gets, one only the weak one, one both, one neither. */
const rows = (scores: [number, number, number, number]): ScoredOutcome[] => [
  { score: scores[0], weakCorrect: false, strongCorrect: true },
  { score: scores[1], weakCorrect: true, strongCorrect: false },
  { score: scores[2], weakCorrect: true, strongCorrect: true },
  { score: scores[3], weakCorrect: false, strongCorrect: false },
];

describe('routingQuality', () => {
  it('is exactly 0.5 and 50% for random routing (a constant score)', () => {
    const quality = routingQuality([...rows([0, 0, 0, 0]), { score: 0, weakCorrect: false, strongCorrect: true }]);
    expect(quality.apgr).toBeCloseTo(0.5, 10);
    expect(quality.cpt50).toBeCloseTo(0.5, 10);
  });

  it('rewards sending the prompts only the strong model gets first', () => {
    // 1 weak-correct of 4; 1 strong-correct of 4 plus a second strong-only prompt: gap 1 of 5.
    const outcomes = [...rows([0.9, 0.1, 0.5, 0.5]), { score: 0.8, weakCorrect: false, strongCorrect: true }];
    const quality = routingQuality(outcomes);
    expect(quality).toMatchObject({ weakAccuracy: 0.4, strongAccuracy: 0.6, count: 5 });
    // Gap: 1 prompt. PGR after 1, 2, 4 (a tie moves together) and 5 strong calls: 1, 2, 2, 1
    // (routing beats the strong model alone); trapezoids over fifths.
    expect(quality.apgr).toBeCloseTo(0.2 * 0.5 + 0.2 * 1.5 + 0.4 * 2 + 0.2 * 1.5, 10);
    expect(quality.cpt50).toBeCloseTo(0.1, 10);
    const reversed = routingQuality(outcomes.map((outcome) => ({ ...outcome, score: -outcome.score })));
    expect(reversed.apgr).toBeLessThan(0.5);
  });
});
