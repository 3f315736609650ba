import { GatewayError, GrpcStatus } from '@gateway/grpc';
import { QUALITY_TIERS, type CatalogModel, type QualityTier } from '@gateway/catalog';
import { difficultyScore, tierForScore } from './difficulty-score.js';
import { traitRefusal, type Traits } from './trait-refusal.js';

/** The policies "auto" accepts; an empty policy means balanced. */
export const ROUTING_POLICIES = ['balanced', 'cheapest', 'best', 'fastest'] as const;
export type RoutingPolicy = (typeof ROUTING_POLICIES)[number];

/** How long a caller should wait before retrying when no capable model is available. */
export const RETRY_AFTER_MS = 5_000;

/** Reads a policy name; empty means balanced, anything unknown is the caller's error. */
export function readPolicy(policy: string | undefined): RoutingPolicy {
  const name = policy?.trim() || 'balanced';
  if (!(ROUTING_POLICIES as readonly string[]).includes(name)) {
    throw new GatewayError(GrpcStatus.INVALID_ARGUMENT, 'invalid_value', `Unknown routing policy \`${name}\`; expected one of ${ROUTING_POLICIES.join(', ')}.`, { param: 'policy' });
  }
  return name as RoutingPolicy;
}

/** What "auto" chose and why. */
export interface AutoChoice {
  model: CatalogModel;
  /** The prompt's difficulty score, 0..1, whatever the policy. */
  score: number;
}

/** Input of one "auto" decision. */
export interface AutoRequest {
  /** The switched-on models, in catalog order. */
  models: readonly CatalogModel[];
  isAvailable(id: string): boolean;
  traits: Traits;
  promptText: string;
  policy: RoutingPolicy;
}

/**
 * Chooses a model for "auto". This is the first, simple policy; the learned chooser is a later
 * issue.
 *
 * 1. Candidates: the switched-on models, but simulated ones only while no real provider is on,
 *    so that a production gateway never answers "auto" with a simulation.
 * 2. Capable: candidates that can serve the traits (tools, vision, JSON mode, streaming, the
 *    completion budget, the context window). None: INVALID_ARGUMENT naming what no model can do.
 * 3. Available: capable models whose health allows traffic. None: UNAVAILABLE model_unavailable,
 *    retryable after RETRY_AFTER_MS.
 * 4. Policy:
 *    - balanced: the prompt's difficulty score picks a tier; the cheapest model of that tier
 *      wins. An empty tier gives way to the nearest tier with a model, the higher one on a tie,
 *      so that a hard prompt never lands on a weaker model than it has to.
 *    - cheapest: the cheapest model (input + output price per million tokens).
 *    - best: the highest tier; within it the priciest, price being the only strength signal the
 *      catalog has.
 *    - fastest: the smallest tier (smaller models answer sooner), then the lowest simulated
 *      time to first token, then the cheapest.
 *    Ties keep catalog order.
 */
export function chooseAutoModel(request: AutoRequest): AutoChoice {
  const score = difficultyScore(request.promptText);
  const hasRealModel = request.models.some((model) => model.provider !== 'simulated');
  const candidates = request.models.filter((model) => (model.provider === 'simulated') !== hasRealModel);
  const capable = candidates.filter((model) => traitRefusal(model, request.traits) === undefined);
  if (capable.length === 0) throw noCapableModel(candidates, request.traits);
  const available = capable.filter((model) => request.isAvailable(model.id));
  if (available.length === 0) {
    throw new GatewayError(GrpcStatus.UNAVAILABLE, 'model_unavailable', 'No model able to serve this request is available right now. Please retry later.', { retryAfterMs: RETRY_AFTER_MS, retryable: true });
  }
  return { model: pick(available, request.policy, score), score };
}

function pick(models: CatalogModel[], policy: RoutingPolicy, score: number): CatalogModel {
  switch (policy) {
    case 'cheapest':
      return first(models, (a, b) => price(a) - price(b));
    case 'best':
      return first(models, (a, b) => tierRank(b.quality_tier) - tierRank(a.quality_tier) || price(b) - price(a));
    case 'fastest':
      return first(models, (a, b) => tierRank(a.quality_tier) - tierRank(b.quality_tier) || timeToFirstToken(a) - timeToFirstToken(b) || price(a) - price(b));
    case 'balanced': {
      const target = tierRank(tierForScore(score));
      const distance = (model: CatalogModel) => Math.abs(tierRank(model.quality_tier) - target);
      return first(models, (a, b) => distance(a) - distance(b) || tierRank(b.quality_tier) - tierRank(a.quality_tier) || price(a) - price(b));
    }
  }
}

/** The first model in the given order; the sort is stable, so ties keep catalog order. */
function first(models: CatalogModel[], compare: (a: CatalogModel, b: CatalogModel) => number): CatalogModel {
  return [...models].sort(compare)[0];
}

function tierRank(tier: QualityTier): number {
  return QUALITY_TIERS.indexOf(tier);
}

function price(model: CatalogModel): number {
  return model.pricing.input_micro_usd_per_mtok + model.pricing.output_micro_usd_per_mtok;
}

/** Real models have no measured latency yet; they sort after simulated ones of the same tier. */
function timeToFirstToken(model: CatalogModel): number {
  return model.simulation?.time_to_first_token_ms ?? Number.MAX_SAFE_INTEGER;
}

/**
 * The error when no candidate can serve the traits: the first single need no model meets, or,
 * when each need alone is met by some model, the combination.
 */
function noCapableModel(candidates: CatalogModel[], traits: Traits): GatewayError {
  const unsupported = (param: string | undefined, message: string) => new GatewayError(GrpcStatus.INVALID_ARGUMENT, 'unsupported_parameter', message, { param });
  const none = (test: (model: CatalogModel) => boolean) => !candidates.some(test);
  if (traits.needsTools && none((model) => model.capabilities.tools)) return unsupported('tools', 'No model of this gateway supports tools.');
  if (traits.needsVision && none((model) => model.capabilities.vision)) return unsupported('messages', 'No model of this gateway supports image inputs.');
  if (traits.needsJsonMode && none((model) => model.capabilities.json_mode)) return unsupported('response_format', 'No model of this gateway supports JSON mode (response_format).');
  if (traits.stream && none((model) => model.capabilities.streaming)) return unsupported('stream', 'No model of this gateway supports streaming.');
  const largestOutput = Math.max(0, ...candidates.map((model) => model.max_output_tokens));
  if (traits.maxTokens > largestOutput) return unsupported('max_tokens', `max_tokens is too large: ${traits.maxTokens}. No model of this gateway supports more than ${largestOutput} completion tokens.`);
  const largestWindow = Math.max(0, ...candidates.map((model) => model.context_window));
  const requested = traits.promptTokens + traits.maxTokens;
  if (requested > largestWindow) {
    return new GatewayError(
      GrpcStatus.INVALID_ARGUMENT,
      'context_length_exceeded',
      `The largest context window of any model is ${largestWindow} tokens. However, you requested ${requested} tokens (${traits.promptTokens} in the messages, ${traits.maxTokens} in the completion). Please reduce the length of the messages or completion.`,
      { param: 'messages' },
    );
  }
  const needs = [
    traits.needsTools ? 'tools' : undefined,
    traits.needsVision ? 'image inputs' : undefined,
    traits.needsJsonMode ? 'JSON mode' : undefined,
    traits.stream ? 'streaming' : undefined,
    `${requested} tokens of context`,
  ].filter((need): need is string => need !== undefined);
  return unsupported(undefined, `No model of this gateway supports this combination: ${needs.join(', ')}.`);
}
