import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DENSE_FEATURE_COUNT, DENSE_FEATURE_NAMES, extractPromptFeatures, type FeatureOptions } from './prompt-features.js';

/** The shipped model file, next to `src/` and `dist/`, so it resolves the same from both. */
export const DEFAULT_MODEL_PATH = fileURLToPath(new URL('../model/auto-router.json', import.meta.url));

/**
 * The `auto` scorer's model file, written by the training command. A logistic regression over
 * standardised engineered features and hashed n-grams, then a monotone calibration (Platt) that
 * turns its logit into P(only the strong model answers correctly).
 */
export interface AutoRouterModel {
  /** Bumped when the file's shape changes. */
  format: 1;
  features: FeatureOptions & { dense: readonly string[] };
  /** Per engineered feature: subtracted, then divided, before the weight applies. */
  denseMean: number[];
  denseScale: number[];
  /** DENSE_FEATURE_COUNT engineered weights, then `hashBuckets` n-gram weights. */
  weights: number[];
  /**
   * Hand-set log-odds per unit of an engineered feature (by name) for signals the training data has
   * no example of (code, writing, small talk); added after calibration. See the README.
   */
  priors: Record<string, number>;
  /** P(strong needed) = sigmoid(slope * logit + intercept). */
  calibration: { slope: number; intercept: number };
  /** Score thresholds of the balanced policy: at or above `standard`, standard; at or above `premium`, premium. */
  tierThresholds: { standard: number; premium: number };
  /** How the file was made and how well it routes, for people reading it. */
  provenance: Record<string, unknown>;
}

/** Reads and checks a model file; fails naming the file when it does not fit this code. */
export function loadAutoRouterModel(path: string = DEFAULT_MODEL_PATH): AutoRouterModel {
  const model = JSON.parse(readFileSync(path, 'utf8')) as AutoRouterModel;
  const expected = DENSE_FEATURE_NAMES.join(',');
  if (model.format !== 1 || model.features?.dense?.join(',') !== expected || model.weights?.length !== DENSE_FEATURE_COUNT + model.features.hashBuckets) {
    throw new Error(`${path}: the model file does not match this scorer's features; retrain with \`pnpm --filter @gateway/router train\`.`);
  }
  return model;
}

const sigmoid = (value: number) => 1 / (1 + Math.exp(-value));

/**
 * Scores prompts with a model: how likely the prompt needs the strong model, 0..1. The one scorer
 * behind Route and the `score` command.
 */
export class AutoRouterScorer {
  private readonly priorWeights: Float64Array;

  constructor(readonly model: AutoRouterModel) {
    this.priorWeights = new Float64Array(DENSE_FEATURE_COUNT);
    for (const [name, weight] of Object.entries(model.priors)) {
      const index = DENSE_FEATURE_NAMES.indexOf(name as (typeof DENSE_FEATURE_NAMES)[number]);
      if (index < 0) throw new Error(`unknown prior feature ${name}`);
      this.priorWeights[index] = weight;
    }
  }

  /**
   * P(strong model needed), 0..1, rounded to 4 decimals so that logs and responses stay short:
   * the calibrated learned logit plus the hand-set priors (in log-odds).
   */
  score(text: string): number {
    // Nothing to answer needs no strong model; this also keeps an unreadable request cheap.
    if (text.trim() === '') return 0;
    const { indices, values } = extractPromptFeatures(text, this.model.features);
    const { slope, intercept } = this.model.calibration;
    const logOdds = slope * linearLogit(this.model, indices, values) + intercept + this.priorLogit(indices, values);
    return Math.round(sigmoid(logOdds) * 10_000) / 10_000;
  }

  private priorLogit(indices: number[], values: number[]): number {
    let sum = 0;
    for (let position = 0; position < indices.length && indices[position] < DENSE_FEATURE_COUNT; position += 1) {
      sum += this.priorWeights[indices[position]] * values[position];
    }
    return sum;
  }
}

/** The learned part of the logit: standardised engineered features and raw n-gram values. */
export function linearLogit(model: Pick<AutoRouterModel, 'weights' | 'denseMean' | 'denseScale'>, indices: number[], values: number[]): number {
  const { weights, denseMean, denseScale } = model;
  let sum = 0;
  // Absent engineered features are 0, which standardises to -mean/scale, not to 0.
  for (let index = 0; index < DENSE_FEATURE_COUNT; index += 1) sum += weights[index] * (0 - denseMean[index]) / denseScale[index];
  for (let position = 0; position < indices.length; position += 1) {
    const index = indices[position];
    sum += index < DENSE_FEATURE_COUNT ? weights[index] * values[position] / denseScale[index] : weights[index] * values[position];
  }
  return sum;
}
