import { AutoRouterScorer, linearLogit, type AutoRouterModel } from './auto-router-model.js';
import { DENSE_FEATURE_COUNT, DENSE_FEATURE_NAMES, extractPromptFeatures, type FeatureOptions, type PromptFeatures } from './prompt-features.js';
import { routingQuality, type RoutingQuality } from './routing-quality.js';

/** One row of ../shared/data/routing/train.jsonl, as the trainer reads it. */
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
  features: FeatureOptions;
  /**
   * Weight of rows where both models agree (both right or both wrong). Their target is 0.5: they
   * say "routing this prompt changes nothing", which keeps the scorer from reading "easy" or
   * "impossible" as "needs the strong model".
   */
  tieWeight: number;
  /** L2 penalty on the engineered and the hashed weights. */
  l2Dense: number;
  l2Hashed: number;
  iterations: number;
  learningRate: number;
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
  features: { hashBuckets: 4_096, bigrams: true },
  tieWeight: 1,
  l2Dense: 1e-3,
  l2Hashed: 1e-2,
  iterations: 300,
  learningRate: 0.05,
  priors: { code_syntax: 1.2, code_words: 0.6, writing_verbs: -0.6, greeting_or_small_talk: -2.5, short_prompt: -2 },
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
export function splitRows(rows: readonly RoutingRow[], share: number, seed: number): { train: RoutingRow[]; validation: RoutingRow[] } {
  const random = seededRandom(seed);
  const strata = new Map<string, RoutingRow[]>();
  for (const row of [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    const key = `${row.source}/${row.weakCorrect}/${row.strongCorrect}`;
    strata.set(key, [...(strata.get(key) ?? []), row]);
  }
  const train: RoutingRow[] = [];
  const validation: RoutingRow[] = [];
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

/** The smallest standard deviation an engineered feature is divided by. */
const MIN_DENSE_SCALE = 0.1;

interface Example {
  features: PromptFeatures;
  target: number;
  weight: number;
}

/** Target and weight of a row: 1 when only the strong model is right, 0 when only the weak one is, 0.5 otherwise. */
function example(row: RoutingRow, features: PromptFeatures, options: TrainingOptions): Example {
  const agree = row.weakCorrect === row.strongCorrect;
  return { features, target: agree ? 0.5 : row.strongCorrect ? 1 : 0, weight: agree ? options.tieWeight : 1 };
}

/**
 * Fits the weights by full-batch Adam on weighted cross-entropy with L2: deterministic (no
 * sampling), a few seconds for ten thousand prompts.
 */
function fitWeights(examples: Example[], options: TrainingOptions): Pick<AutoRouterModel, 'weights' | 'denseMean' | 'denseScale'> {
  const size = DENSE_FEATURE_COUNT + options.features.hashBuckets;
  const denseMean = new Array<number>(DENSE_FEATURE_COUNT).fill(0);
  const denseSquare = new Array<number>(DENSE_FEATURE_COUNT).fill(0);
  for (const { features } of examples) {
    for (let position = 0; position < features.indices.length && features.indices[position] < DENSE_FEATURE_COUNT; position += 1) {
      denseMean[features.indices[position]] += features.values[position];
      denseSquare[features.indices[position]] += features.values[position] ** 2;
    }
  }
  const denseScale = denseMean.map((sum, index) => {
    const mean = sum / examples.length;
    const variance = denseSquare[index] / examples.length - mean * mean;
    // A floor keeps a feature that is rare in the data (a greeting, a very short prompt) from
    // being blown up to huge standardised values on the prompts that do have it.
    return Math.max(MIN_DENSE_SCALE, Math.sqrt(Math.max(0, variance)));
  });
  for (let index = 0; index < DENSE_FEATURE_COUNT; index += 1) denseMean[index] /= examples.length;
  // The bias column is constant: it stays 1 so that its weight is the intercept.
  denseMean[0] = 0;
  denseScale[0] = 1;

  const weights = new Float64Array(size);
  const moment = new Float64Array(size);
  const velocity = new Float64Array(size);
  const gradient = new Float64Array(size);
  const totalWeight = examples.reduce((sum, item) => sum + item.weight, 0);
  const beta1 = 0.9;
  const beta2 = 0.999;
  const current = { weights: weights as unknown as number[], denseMean, denseScale };
  for (let step = 1; step <= options.iterations; step += 1) {
    gradient.fill(0);
    let offsetGradient = 0;
    for (const { features, target, weight } of examples) {
      const predicted = 1 / (1 + Math.exp(-linearLogit(current, features.indices, features.values)));
      const error = (weight * (predicted - target)) / totalWeight;
      offsetGradient += error;
      for (let position = 0; position < features.indices.length; position += 1) {
        const index = features.indices[position];
        gradient[index] += error * (index < DENSE_FEATURE_COUNT ? features.values[position] / denseScale[index] : features.values[position]);
      }
    }
    // Standardised features are centred: every row also carries -mean/scale on each engineered column.
    for (let index = 1; index < DENSE_FEATURE_COUNT; index += 1) gradient[index] -= offsetGradient * denseMean[index] / denseScale[index];
    for (let index = 1; index < size; index += 1) gradient[index] += (index < DENSE_FEATURE_COUNT ? options.l2Dense : options.l2Hashed) * weights[index];
    for (let index = 0; index < size; index += 1) {
      moment[index] = beta1 * moment[index] + (1 - beta1) * gradient[index];
      velocity[index] = beta2 * velocity[index] + (1 - beta2) * gradient[index] ** 2;
      const corrected = moment[index] / (1 - beta1 ** step);
      const scale = Math.sqrt(velocity[index] / (1 - beta2 ** step)) + 1e-8;
      weights[index] -= (options.learningRate * corrected) / scale;
    }
  }
  return { weights: Array.from(weights, (weight) => round(weight, 5)), denseMean: denseMean.map((value) => round(value, 6)), denseScale: denseScale.map((value) => round(value, 6)) };
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

/** Trains a full model (weights, calibration, thresholds) on rows whose features are known. */
function trainModel(rows: RoutingRow[], featuresOf: (row: RoutingRow) => PromptFeatures, options: TrainingOptions, provenance: Record<string, unknown>): AutoRouterModel {
  const fitted = fitWeights(rows.map((row) => example(row, featuresOf(row), options)), options);
  const logits = rows.map((row) => linearLogit(fitted, featuresOf(row).indices, featuresOf(row).values));
  const calibration = calibrate(logits, rows.map((row) => row.strongCorrect && !row.weakCorrect));
  const draft: AutoRouterModel = {
    format: 1,
    features: { ...options.features, dense: [...DENSE_FEATURE_NAMES] },
    ...fitted,
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

function evaluate(router: string, split: string, rows: RoutingRow[], score: (row: RoutingRow) => number): QualityLine {
  const quality = routingQuality(rows.map((row) => ({ score: score(row), weakCorrect: row.weakCorrect, strongCorrect: row.strongCorrect })));
  return { router, split, ...quality };
}

/**
 * Trains the shipped model on the training split and reports, on the held-out validation split,
 * the router beside random routing (a constant score) and prompt length alone; then, to show how
 * it carries over to prompts unlike its training data, models trained without one source, and
 * without a fifth of the MMLU subjects, scored on what they never saw. Deterministic: the same
 * rows and options give a byte-identical model.
 */
export function trainAutoRouter(rows: readonly RoutingRow[], options: TrainingOptions = DEFAULT_TRAINING_OPTIONS): TrainingResult {
  const cache = new Map<string, PromptFeatures>();
  const featuresOf = (row: RoutingRow) => {
    let features = cache.get(row.id);
    if (!features) cache.set(row.id, (features = extractPromptFeatures(row.text, options.features)));
    return features;
  };
  const { train, validation } = splitRows(rows, options.validationShare, options.seed);
  const model = trainModel(train, featuresOf, options, {
    trained_on: `${train.length} prompts of train.jsonl (seed ${options.seed}; ${validation.length} held out, stratified by source and outcome)`,
    label: 'target 1 when only the strong model is right, 0 when only the weak one is, 0.5 (weight tieWeight) when they agree',
    options: { ...options, features: undefined, priors: undefined },
  });
  const scorer = new AutoRouterScorer(model);
  const report: QualityLine[] = [];
  const bySource = (source: string) => validation.filter((row) => row.source === source);
  for (const [split, part] of [['validation', validation], ['validation mmlu', bySource('mmlu')], ['validation gsm8k', bySource('gsm8k')]] as const) {
    report.push(evaluate('auto router', split, part, (row) => scorer.score(row.text)));
    report.push(evaluate('prompt length', split, part, (row) => row.text.length));
    report.push(evaluate('random', split, part, () => 0));
  }

  // Generalisation: train without a whole source, or without a fifth of the MMLU subjects, and score those.
  for (const source of ['gsm8k', 'mmlu']) {
    const unseen = rows.filter((row) => row.source === source);
    const held = trainModel(train.filter((row) => row.source !== source), featuresOf, options, {});
    const heldScorer = new AutoRouterScorer(held);
    report.push(evaluate('auto router', `unseen source ${source}`, unseen, (row) => heldScorer.score(row.text)));
    report.push(evaluate('prompt length', `unseen source ${source}`, unseen, (row) => row.text.length));
  }
  const subjects = [...new Set(rows.filter((row) => row.subject).map((row) => row.subject!))].sort();
  const heldSubjects = new Set(subjects.filter((_, index) => index % 5 === 2));
  const unseenSubjects = validation.filter((row) => row.subject !== undefined && heldSubjects.has(row.subject));
  const withoutSubjects = trainModel(train.filter((row) => !(row.subject !== undefined && heldSubjects.has(row.subject))), featuresOf, options, {});
  const subjectScorer = new AutoRouterScorer(withoutSubjects);
  report.push(evaluate('auto router', `unseen MMLU subjects (${heldSubjects.size})`, unseenSubjects, (row) => subjectScorer.score(row.text)));
  report.push(evaluate('prompt length', `unseen MMLU subjects (${heldSubjects.size})`, unseenSubjects, (row) => row.text.length));

  model.provenance.validation = Object.fromEntries(report.filter((line) => line.router === 'auto router').map((line) => [line.split, { apgr: round(line.apgr, 4), cpt50: round(line.cpt50, 4) }]));
  return { model, report, trainCount: train.length, validationCount: validation.length };
}
