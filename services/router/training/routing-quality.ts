/**
 * RouteLLM's measure of a router on graded prompts: route the highest-scoring share of prompts to
 * the strong model and the rest to the weak one, sweep that share from 0 to 100%, and read the
 * performance gap recovered, PGR = (accuracy - weak accuracy) / (strong accuracy - weak accuracy).
 */

/** One graded prompt and the router's score for it. */
export interface ScoredOutcome {
  score: number;
  weakCorrect: boolean;
  strongCorrect: boolean;
}

/** A router's quality on a set of prompts. */
export interface RoutingQuality {
  /** Area under PGR against the share of strong calls (0..1); random routing is 0.5. */
  apgr: number;
  /** The share of strong calls (0..1) needed to recover half the gap; random routing is 0.5. */
  cpt50: number;
  weakAccuracy: number;
  strongAccuracy: number;
  count: number;
}

/**
 * APGR and CPT(50%) as RouteLLM's evaluate.py computes them, with the threshold swept over every
 * prompt instead of 10 quantiles (the limit of its trapezoid rule). Prompts with equal scores move
 * to the strong model together, and the curve is a straight line across the group: the expected
 * curve under random tie-breaking, so a constant score is exactly random routing (APGR 0.5).
 */
export function routingQuality(outcomes: readonly ScoredOutcome[]): RoutingQuality {
  const count = outcomes.length;
  const weakTotal = outcomes.filter((outcome) => outcome.weakCorrect).length;
  const strongTotal = outcomes.filter((outcome) => outcome.strongCorrect).length;
  const gap = strongTotal - weakTotal;
  const sorted = [...outcomes].sort((a, b) => b.score - a.score);
  // Points (share of strong calls, PGR) at each boundary between groups of equal score.
  const points: Array<[number, number]> = [[0, 0]];
  let correct = weakTotal;
  for (let index = 0; index < count; ) {
    let end = index;
    while (end < count && sorted[end].score === sorted[index].score) {
      correct += Number(sorted[end].strongCorrect) - Number(sorted[end].weakCorrect);
      end += 1;
    }
    points.push([end / count, gap === 0 ? 0 : (correct - weakTotal) / gap]);
    index = end;
  }
  let area = 0;
  let cpt50 = Number.NaN;
  for (let index = 1; index < points.length; index += 1) {
    const [x0, y0] = points[index - 1];
    const [x1, y1] = points[index];
    area += ((y0 + y1) / 2) * (x1 - x0);
    if (Number.isNaN(cpt50) && y1 >= 0.5) cpt50 = y1 === y0 ? x1 : x0 + ((0.5 - y0) / (y1 - y0)) * (x1 - x0);
  }
  return { apgr: area, cpt50, weakAccuracy: weakTotal / Math.max(1, count), strongAccuracy: strongTotal / Math.max(1, count), count };
}
