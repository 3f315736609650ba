import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PROMPT_FEATURE_COUNT, PROMPT_FEATURE_NAMES, promptFeatures } from './prompt-features.js';

/** The shipped model file, next to `src/` and `dist/`, so it resolves the same from both. */
export const DEFAULT_MODEL_PATH = fileURLToPath(new URL('../model/auto-router.json', import.meta.url));

/**
 * The `auto` scorer's model file, written by the training command. Two logistic regressions over
 * the same standardised prompt features, one for P(the strong model answers correctly) and one
 * for P(the weak model does); their difference is the accuracy the strong model is expected to
 * add, which a monotone calibration (Platt) turns into P(only the strong model answers correctly).
 *
 * Two models rather than one fitted on "only the strong one was right": each learns from every
 * graded answer (both right and both wrong are different lessons, which one model on the
 * difference lumps together), and on subjects absent from training the difference ranks prompts
 * better (see the README's quality table).
 */
export interface AutoRouterModel {
  /** Bumped when the file's shape changes. */
  format: 2;
  /** The feature names, in order (PROMPT_FEATURE_NAMES when the file was written). */
  features: readonly string[];
  /** Per feature: subtracted, then divided, before the weights apply (the bias column: 0 and 1). */
  featureMean: number[];
  featureScale: number[];
  /** Logistic weights of P(strong model correct) and P(weak model correct), one per feature. */
  strong: number[];
  weak: number[];
  /**
   * Hand-set log-odds per unit of a feature (by name) for signals the training data has no
   * example of (code, writing, small talk); added after calibration. See the README.
   */
  priors: Record<string, number>;
  /** P(strong needed) = sigmoid(slope * (P(strong correct) - P(weak correct)) + intercept). */
  calibration: { slope: number; intercept: number };
  /** Score thresholds of the balanced policy: at or above `standard`, standard; at or above `premium`, premium. */
  tierThresholds: { standard: number; premium: number };
  /** How the file was made and how well it routes, for people reading it. */
  provenance: Record<string, unknown>;
}

/** The part of a model that turns features into the expected gain of the strong model. */
export type GainModel = Pick<AutoRouterModel, 'featureMean' | 'featureScale' | 'strong' | 'weak'>;

/** Reads and checks a model file; fails naming the file when it does not fit this code. */
export function loadAutoRouterModel(path: string = DEFAULT_MODEL_PATH): AutoRouterModel {
  const model = JSON.parse(readFileSync(path, 'utf8')) as AutoRouterModel;
  const sizes = [model.featureMean, model.featureScale, model.strong, model.weak].map((values) => (Array.isArray(values) ? values.length : -1));
  if (model.format !== 2 || model.features?.join(',') !== PROMPT_FEATURE_NAMES.join(',') || sizes.some((size) => size !== PROMPT_FEATURE_COUNT)) {
    throw new Error(`${path}: the model file does not match this scorer's features; retrain with \`pnpm --filter @gateway/router train\`.`);
  }
  return model;
}

const sigmoid = (value: number) => 1 / (1 + Math.exp(-value));

/** Standardises a feature vector in place with the model's means and scales. */
export function standardize(model: Pick<AutoRouterModel, 'featureMean' | 'featureScale'>, features: number[]): number[] {
  for (let index = 0; index < features.length; index += 1) features[index] = (features[index] - model.featureMean[index]) / model.featureScale[index];
  return features;
}

/** The dot product of weights and standardised features: a logistic model's logit. */
export function logit(weights: ArrayLike<number>, standardized: ArrayLike<number>): number {
  let sum = 0;
  for (let index = 0; index < standardized.length; index += 1) sum += weights[index] * standardized[index];
  return sum;
}

/** P(strong correct) - P(weak correct) for standardised features: the accuracy routing up adds, -1..1. */
export function expectedGain(model: GainModel, standardized: readonly number[]): number {
  return sigmoid(logit(model.strong, standardized)) - sigmoid(logit(model.weak, standardized));
}

/**
 * Scores prompts with a model: how likely the prompt needs the strong model, 0..1. The one scorer
 * behind Route and the `score` command.
 */
export class AutoRouterScorer {
  private readonly priorWeights: Float64Array;

  constructor(readonly model: AutoRouterModel) {
    this.priorWeights = new Float64Array(PROMPT_FEATURE_COUNT);
    for (const [name, weight] of Object.entries(model.priors)) {
      const index = PROMPT_FEATURE_NAMES.indexOf(name as (typeof PROMPT_FEATURE_NAMES)[number]);
      if (index < 0) throw new Error(`unknown prior feature ${name}`);
      this.priorWeights[index] = weight;
    }
  }

  /**
   * P(strong model needed), 0..1, rounded to 4 decimals so that logs and responses stay short:
   * the calibrated expected gain plus the hand-set priors (in log-odds, on the raw features).
   */
  score(text: string): number {
    // Nothing to answer needs no strong model; this also keeps an unreadable request cheap.
    if (text.trim() === '') return 0;
    const features = promptFeatures(text);
    const prior = logit(this.priorWeights, features);
    const { slope, intercept } = this.model.calibration;
    const logOdds = slope * expectedGain(this.model, standardize(this.model, features)) + intercept + prior;
    return Math.round(sigmoid(logOdds) * 10_000) / 10_000;
  }
}
