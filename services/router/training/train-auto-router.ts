import { AutoRouterScorer, expectedGain, logit, standardize, type AutoRouterModel } from '../src/auto-router-model.js';
import { PROMPT_FEATURE_COUNT, PROMPT_FEATURE_NAMES, promptFeatures } from '../src/prompt-features.js';
import { routingQuality, type RoutingQuality } from './routing-quality.js';

/** One row of the routing data (data/train.jsonl.gz), as the trainer reads it. */
export interface RoutingRow {
  id: string;
  source: string;
  subject?: string;
  /** The prompt text (the user messages joined, as promptText builds it). */
  text: string;
  weakCorrect: boolean;
  strongCorrect: boolean;
}

/** Everything that decides the trained model; fixed so that training is reproducible. */
export interface TrainingOptions {
  seed: number;
  /** Share of each source held out for validation. */
  validationShare: number;
  /** L2 penalty on the standardised weights of both models (not on the intercepts). */
  l2: number;
  /** Newton steps per model; the fit has converged well before. */
  newtonSteps: number;
  /** How many folds of MMLU subjects the report holds out, one at a time, to measure unseen subjects. */
  subjectFolds: number;
  /** Hand-set log-odds for signals absent from the data (see AutoRouterModel.priors). */
  priors: Record<string, number>;
  /** Shares of training prompts (by score, from the top) that balanced sends to premium, and to standard or better. */
  premiumShare: number;
  standardOrBetterShare: number;
}

/** The options the shipped model is trained with. */
export const DEFAULT_TRAINING_OPTIONS: TrainingOptions = {
  seed: 20_240_701,
  validationShare: 0.2,
  l2: 2e-2,
  newtonSteps: 12,
  subjectFolds: 5,
  priors: { code_syntax: 1.2, log_characters: 1, code_words: 1.2, writing_verbs: -0.6, greeting_or_small_talk: -2.5, short_prompt: -2, proof_or_derivation: 2 },
  premiumShare: 0.25,
  standardOrBetterShare: 0.6,
};

/** A line of the evaluation table. */
export interface QualityLine extends RoutingQuality {
  router: string;
  split: string;
}

/** The trained model and how well it, and the baselines, route. */
export interface TrainingResult {
  model: AutoRouterModel;
  report: QualityLine[];
  trainCount: number;
  validationCount: number;
}

/** mulberry32: a small seeded generator, so that the split and nothing else depends on the seed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * Splits rows into training and validation, stratified by source and by outcome (which model was
 * right), in a seeded shuffle of the id-sorted rows: the same data and seed give the same split.
 */
export function splitRows<Row extends RoutingRow>(rows: readonly Row[], share: number, seed: number): { train: Row[]; validation: Row[] } {
  const random = seededRandom(seed);
  const strata = new Map<string, Row[]>();
  for (const row of [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    const key = `${row.source}/${row.weakCorrect}/${row.strongCorrect}`;
    strata.set(key, [...(strata.get(key) ?? []), row]);
  }
  const train: Row[] = [];
  const validation: Row[] = [];
  for (const key of [...strata.keys()].sort()) {
    const group = strata.get(key)!;
    for (let index = group.length - 1; index > 0; index -= 1) {
      const other = Math.floor(random() * (index + 1));
      [group[index], group[other]] = [group[other], group[index]];
    }
    const held = Math.round(group.length * share);
    validation.push(...group.slice(0, held));
    train.push(...group.slice(held));
  }
  return { train, validation };
}

/** The smallest standard deviation a feature is divided by. */
const MIN_FEATURE_SCALE = 0.05;

/**
 * Means and scales that standardise each feature over the training rows. A floor keeps a feature
 * that is rare in the data (a greeting, a very short prompt) from being blown up to huge
 * standardised values on the prompts that do have it. The bias column stays 1.
 */
function featureStandardization(rows: number[][]): Pick<AutoRouterModel, 'featureMean' | 'featureScale'> {
  const featureMean = new Array<number>(PROMPT_FEATURE_COUNT).fill(0);
  const squares = new Array<number>(PROMPT_FEATURE_COUNT).fill(0);
  for (const features of rows) {
    for (let index = 0; index < PROMPT_FEATURE_COUNT; index += 1) {
      featureMean[index] += features[index];
      squares[index] += features[index] ** 2;
    }
  }
  const featureScale = featureMean.map((sum, index) => {
    const mean = sum / rows.length;
    return Math.max(MIN_FEATURE_SCALE, Math.sqrt(Math.max(0, squares[index] / rows.length - mean * mean)));
  });
  for (let index = 0; index < PROMPT_FEATURE_COUNT; index += 1) featureMean[index] /= rows.length;
  featureMean[0] = 0;
  featureScale[0] = 1;
  return { featureMean: featureMean.map((value) => round(value, 6)), featureScale: featureScale.map((value) => round(value, 6)) };
}

/** Solves the symmetric positive definite system a x = b by Cholesky decomposition. */
function solveSymmetric(a: number[][], b: number[]): number[] {
  const size = b.length;
  const lower = a.map(() => new Array<number>(size).fill(0));
  for (let row = 0; row < size; row += 1) {
    for (let column = 0; column <= row; column += 1) {
      let sum = a[row][column];
      for (let k = 0; k < column; k += 1) sum -= lower[row][k] * lower[column][k];
      lower[row][column] = row === column ? Math.sqrt(Math.max(sum, 1e-12)) : sum / lower[column][column];
    }
  }
  const forward = new Array<number>(size).fill(0);
  for (let row = 0; row < size; row += 1) {
    let sum = b[row];
    for (let k = 0; k < row; k += 1) sum -= lower[row][k] * forward[k];
    forward[row] = sum / lower[row][row];
  }
  const solution = new Array<number>(size).fill(0);
  for (let row = size - 1; row >= 0; row -= 1) {
    let sum = forward[row];
    for (let k = row + 1; k < size; k += 1) sum -= lower[k][row] * solution[k];
    solution[row] = sum / lower[row][row];
  }
  return solution;
}

/**
 * Fits a logistic regression with an L2 penalty (the intercept free) by Newton's method: exact to
 * the optimum in a few steps for fifty features, so the result does not depend on a learning rate
 * or an iteration count, and it is deterministic.
 */
function fitLogistic(standardized: number[][], labels: boolean[], l2: number, steps: number): number[] {
  const size = PROMPT_FEATURE_COUNT;
  let weights = new Array<number>(size).fill(0);
  for (let step = 0; step < steps; step += 1) {
    const gradient = new Array<number>(size).fill(0);
    const hessian = weights.map(() => new Array<number>(size).fill(0));
    for (let row = 0; row < standardized.length; row += 1) {
      const features = standardized[row];
      const predicted = 1 / (1 + Math.exp(-logit(weights, features)));
      const error = (predicted - Number(labels[row])) / standardized.length;
      const curvature = (predicted * (1 - predicted)) / standardized.length;
      for (let i = 0; i < size; i += 1) {
        gradient[i] += error * features[i];
        const scaled = curvature * features[i];
        for (let j = 0; j <= i; j += 1) hessian[i][j] += scaled * features[j];
      }
    }
    for (let i = 0; i < size; i += 1) {
      for (let j = 0; j < i; j += 1) hessian[j][i] = hessian[i][j];
      if (i > 0) {
        gradient[i] += l2 * weights[i];
        hessian[i][i] += l2;
      }
    }
    const change = solveSymmetric(hessian, gradient);
    weights = weights.map((weight, index) => weight - change[index]);
  }
  return weights.map((weight) => round(weight, 5));
}

/**
 * Platt scaling: slope and intercept such that sigmoid(slope * logit + intercept) is the chance
 * that only the strong model is right. Monotone, so it changes no ranking, only the meaning of the
 * score's scale.
 */
function calibrate(logits: number[], needed: boolean[]): { slope: number; intercept: number } {
  let slope = 1;
  let intercept = 0;
  for (let step = 0; step < 2_000; step += 1) {
    let gradientSlope = 0;
    let gradientIntercept = 0;
    for (let index = 0; index < logits.length; index += 1) {
      const error = 1 / (1 + Math.exp(-(slope * logits[index] + intercept))) - Number(needed[index]);
      gradientSlope += error * logits[index];
      gradientIntercept += error;
    }
    slope -= (gradientSlope / logits.length) * 2;
    intercept -= (gradientIntercept / logits.length) * 2;
  }
  return { slope: round(slope, 5), intercept: round(intercept, 5) };
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** The score at which the given top share of sorted-descending scores begins. */
function quantileFromTop(scores: number[], share: number): number {
  const sorted = [...scores].sort((a, b) => b - a);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.floor(sorted.length * share) - 1))];
}

/** Rows with their prompt features, computed once per training run. */
type FeaturedRow = RoutingRow & { features: number[] };

/** Trains a full model (both regressions, calibration, thresholds) on featured rows. */
function trainModel(rows: FeaturedRow[], options: TrainingOptions, provenance: Record<string, unknown>): AutoRouterModel {
  const scaling = featureStandardization(rows.map((row) => row.features));
  const standardized = rows.map((row) => standardize(scaling, [...row.features]));
  const strong = fitLogistic(
    standardized,
    rows.map((row) => row.strongCorrect),
    options.l2,
    options.newtonSteps,
  );
  const weak = fitLogistic(
    standardized,
    rows.map((row) => row.weakCorrect),
    options.l2,
    options.newtonSteps,
  );
  const gains = standardized.map((features) => expectedGain({ ...scaling, strong, weak }, features));
  const calibration = calibrate(
    gains,
    rows.map((row) => row.strongCorrect && !row.weakCorrect),
  );
  const draft: AutoRouterModel = {
    format: 2,
    features: [...PROMPT_FEATURE_NAMES],
    ...scaling,
    strong,
    weak,
    priors: { ...options.priors },
    calibration,
    tierThresholds: { standard: 0, premium: 0 },
    provenance,
  };
  const scorer = new AutoRouterScorer(draft);
  const scores = rows.map((row) => scorer.score(row.text));
  draft.tierThresholds = { standard: quantileFromTop(scores, options.standardOrBetterShare), premium: quantileFromTop(scores, options.premiumShare) };
  return draft;
}

function evaluate(router: string, split: string, rows: readonly RoutingRow[], score: (row: RoutingRow) => number): QualityLine {
  const quality = routingQuality(rows.map((row) => ({ score: score(row), weakCorrect: row.weakCorrect, strongCorrect: row.strongCorrect })));
  return { router, split, ...quality };
}

/** The mean of several evaluations (one per fold), prompts added up. */
function meanOf(router: string, split: string, lines: QualityLine[]): QualityLine {
  const mean = (pick: (line: QualityLine) => number) => lines.reduce((sum, line) => sum + pick(line), 0) / lines.length;
  return {
    router,
    split,
    apgr: mean((line) => line.apgr),
    cpt50: mean((line) => line.cpt50),
    weakAccuracy: mean((line) => line.weakAccuracy),
    strongAccuracy: mean((line) => line.strongAccuracy),
    count: lines.reduce((sum, line) => sum + line.count, 0),
  };
}

/**
 * Trains the shipped model on the training split and reports, on the held-out validation split,
 * the router beside random routing (a constant score) and prompt length alone. Then, to show how
 * it carries over to prompts unlike its training data, models trained without one source, and
 * without each fold of the MMLU subjects in turn, scored on the prompts they never saw (every row
 * of the held-out source or subjects). Deterministic: the same rows and options give a
 * byte-identical model.
 */
export function trainAutoRouter(rows: readonly RoutingRow[], options: TrainingOptions = DEFAULT_TRAINING_OPTIONS): TrainingResult {
  const featured: FeaturedRow[] = rows.map((row) => ({ ...row, features: promptFeatures(row.text) }));
  const { train, validation } = splitRows(featured, options.validationShare, options.seed);
  const model = trainModel(train, options, {
    trained_on: `${train.length} prompts of train.jsonl (seed ${options.seed}; ${validation.length} held out, stratified by source and outcome)`,
    labels: 'one logistic regression for "the strong model answered correctly", one for the weak model; the score ranks by their difference',
    options: { ...options, priors: undefined },
  });
  const scorer = new AutoRouterScorer(model);
  const length = (row: RoutingRow) => row.text.length;
  const report: QualityLine[] = [];
  const bySource = (source: string) => validation.filter((row) => row.source === source);
  for (const [split, part] of [
    ['validation', validation],
    ['validation mmlu', bySource('mmlu')],
    ['validation gsm8k', bySource('gsm8k')],
  ] as const) {
    report.push(evaluate('auto router', split, part, (row) => scorer.score(row.text)));
    report.push(evaluate('prompt length', split, part, length));
    report.push(evaluate('random', split, part, () => 0));
  }

  // Generalisation: train without a whole source, or without a fold of the MMLU subjects, and score those.
  const heldOutScore = (trainingRows: FeaturedRow[]) => {
    const held = new AutoRouterScorer(trainModel(trainingRows, options, {}));
    return (row: RoutingRow) => held.score(row.text);
  };
  for (const source of ['gsm8k', 'mmlu']) {
    const unseen = featured.filter((row) => row.source === source);
    report.push(evaluate('auto router', `unseen source ${source}`, unseen, heldOutScore(train.filter((row) => row.source !== source))));
    report.push(evaluate('prompt length', `unseen source ${source}`, unseen, length));
  }
  const subjects = [...new Set(featured.filter((row) => row.subject).map((row) => row.subject!))].sort();
  const routerFolds: QualityLine[] = [];
  const lengthFolds: QualityLine[] = [];
  for (let fold = 0; fold < options.subjectFolds; fold += 1) {
    const held = new Set(subjects.filter((_, index) => index % options.subjectFolds === fold));
    const isHeld = (row: RoutingRow) => row.subject !== undefined && held.has(row.subject);
    const unseen = featured.filter(isHeld);
    routerFolds.push(evaluate('auto router', '', unseen, heldOutScore(train.filter((row) => !isHeld(row)))));
    lengthFolds.push(evaluate('prompt length', '', unseen, length));
  }
  const subjectSplit = `unseen MMLU subjects (${options.subjectFolds} folds of ${subjects.length}, mean)`;
  report.push(meanOf('auto router', subjectSplit, routerFolds), meanOf('prompt length', subjectSplit, lengthFolds));

  model.provenance.validation = Object.fromEntries(
    report.filter((line) => line.router === 'auto router').map((line) => [line.split, { apgr: round(line.apgr, 4), cpt50: round(line.cpt50, 4) }]),
  );
  return { model, report, trainCount: train.length, validationCount: validation.length };
}
