import { GatewayError } from '@gateway/grpc';
import { QUALITY_TIERS, type CatalogModel, type QualityTier } from '@gateway/catalog';
import { wantedTier, type RoutingPolicy, type TierThresholds } from './routing-policy.js';
import { traitRefusal, type Traits } from './trait-refusal.js';

export { readPolicy, type RoutingPolicy } from './routing-policy.js';

/** How long a caller should wait before retrying when no capable model is available. */
export const RETRY_AFTER_MS = 5_000;

/** What "auto" chose and why. */
export interface AutoChoice {
  model: CatalogModel;
  /** The tier the score and policy asked for; undefined for cheapest and fastest. */
  tier: QualityTier | undefined;
  /** One sentence for the caller: what the policy asked for and why this model. */
  reason: string;
  /**
   * Every capable, available candidate in the policy's order, `model` first: a caller bound by a
   * model allow-list takes the first it may use.
   */
  ranked: CatalogModel[];
}

/** Input of one "auto" decision. */
export interface AutoRequest {
  /** The switched-on models, in catalog order. */
  models: readonly CatalogModel[];
  isAvailable(id: string): boolean;
  traits: Traits;
  /** The scorer's P(strong model needed) for the prompt, 0..1. */
  score: number;
  policy: RoutingPolicy;
  /** Where the balanced policy's tiers begin (from the model file). */
  thresholds: TierThresholds;
}

/**
 * Chooses a model for "auto".
 *
 * 1. Candidates: the switched-on models, but simulated ones only while no real provider is on,
 *    so that a production gateway never answers "auto" with a simulation. A `tier>=T` policy also
 *    drops models below T (none left: INVALID_ARGUMENT `invalid_value`, param `policy`).
 * 2. Capable: candidates that can serve the traits (tools, vision, JSON mode, streaming, the
 *    completion budget, the context window for prompt plus budget). None: INVALID_ARGUMENT naming
 *    what no model can do.
 * 3. Available: capable models whose health allows traffic. None: UNAVAILABLE model_unavailable,
 *    retryable after RETRY_AFTER_MS.
 * 4. Policy (see routing-policy.ts): balanced, `score>=X` and `tier>=T` turn the score into a
 *    wanted tier; the model of the nearest tier that has one wins (upwards on a tie, so that a
 *    hard prompt never lands on a weaker model than it has to), the cheapest (input + output price)
 *    within it, then the lowest time to first token. cheapest: the cheapest model. best: the
 *    highest tier, the priciest within it (price is the only strength signal the catalog has).
 *    fastest: the lowest tier (smaller models answer sooner), then the lowest time to first
 *    token, then price. Ties keep catalog order.
 */
export function chooseAutoModel(request: AutoRequest): AutoChoice {
  const { policy, traits } = request;
  const hasRealModel = request.models.some((model) => model.provider !== 'simulated');
  let candidates = request.models.filter((model) => (model.provider === 'simulated') !== hasRealModel);
  if (policy.kind === 'tier') {
    candidates = candidates.filter((model) => tierRank(model.quality_tier) >= tierRank(policy.floor));
    if (candidates.length === 0) {
      throw GatewayError.of('invalid_value', `No model of this gateway is of tier ${policy.floor} or better; choose a lower floor.`, { param: 'policy' });
    }
  }
  const capable = candidates.filter((model) => traitRefusal(model, traits) === undefined);
  if (capable.length === 0) throw noCapableModel(candidates, traits);
  const available = capable.filter((model) => request.isAvailable(model.id));
  if (available.length === 0) {
    throw GatewayError.of('model_unavailable', 'No model able to serve this request is available right now. Please retry later.', {
      retryAfterMs: RETRY_AFTER_MS,
      retryable: true,
    });
  }
  const tier = wantedTier(policy, request.score, request.thresholds);
  const ranked = rank(available, policy, tier);
  const model = ranked[0]!;
  const skipped = capable.length - available.length;
  return { model, tier, reason: explain(request, { tier, model, choices: available.length, skipped }), ranked };
}

/** The models in the policy's order, best first. */
function rank(models: CatalogModel[], policy: RoutingPolicy, tier: QualityTier | undefined): CatalogModel[] {
  switch (policy.kind) {
    case 'cheapest':
      return sorted(models, (a, b) => price(a) - price(b) || timeToFirstToken(a) - timeToFirstToken(b));
    case 'best':
      return sorted(models, (a, b) => tierRank(b.quality_tier) - tierRank(a.quality_tier) || price(b) - price(a));
    case 'fastest':
      return sorted(models, (a, b) => tierRank(a.quality_tier) - tierRank(b.quality_tier) || timeToFirstToken(a) - timeToFirstToken(b) || price(a) - price(b));
    case 'balanced':
    case 'score':
    case 'tier': {
      const target = tierRank(tier ?? 'economy');
      const distance = (model: CatalogModel) => Math.abs(tierRank(model.quality_tier) - target);
      return sorted(
        models,
        (a, b) =>
          distance(a) - distance(b) || tierRank(b.quality_tier) - tierRank(a.quality_tier) || price(a) - price(b) || timeToFirstToken(a) - timeToFirstToken(b),
      );
    }
  }
}

/** What explain says of a choice: the tier wanted, the model chosen, among how many, and how many unavailable were skipped. */
interface Choice {
  tier: QualityTier | undefined;
  model: CatalogModel;
  choices: number;
  skipped: number;
}

/** The reason of an `auto` choice, in words: what the policy asked for and what was chosen among what. */
function explain(request: Pick<AutoRequest, 'policy' | 'score' | 'thresholds'>, { tier, model, choices, skipped }: Choice): string {
  const { policy, score, thresholds } = request;
  let wanted: string;
  switch (policy.kind) {
    case 'balanced':
      wanted = `score ${score} asks for ${tier} (standard from ${thresholds.standard}, premium from ${thresholds.premium})`;
      break;
    case 'score':
      wanted = `score ${score} is ${score >= policy.threshold ? 'at or above' : 'below'} ${policy.threshold}, so ${tier}`;
      break;
    case 'tier':
      wanted = `score ${score} asks for ${tier}, floor ${policy.floor}`;
      break;
    case 'best':
      wanted = 'best asks for the strongest model';
      break;
    case 'cheapest':
      wanted = 'cheapest asks for the lowest price';
      break;
    case 'fastest':
      wanted = 'fastest asks for the quickest answer';
      break;
  }
  const how = tier !== undefined && model.quality_tier !== tier ? `nearest tier with a capable model: ${model.quality_tier}` : `${model.quality_tier} tier`;
  return `${wanted}; ${model.id} (${how}) among ${choices} capable available model${choices === 1 ? '' : 's'}${skipped > 0 ? `, ${skipped} unavailable skipped` : ''}.`;
}

/** The models in the given order; the sort is stable, so ties keep catalog order. */
function sorted(models: CatalogModel[], compare: (a: CatalogModel, b: CatalogModel) => number): CatalogModel[] {
  return [...models].sort(compare);
}

function tierRank(tier: QualityTier): number {
  return QUALITY_TIERS.indexOf(tier);
}

function price(model: CatalogModel): number {
  return model.pricing.input_micro_usd_per_mtok + model.pricing.output_micro_usd_per_mtok;
}

/**
 * The time to first token the router expects. Only the simulated models declare one today; real
 * models sort after them until measured latencies reach the router (not wired yet).
 */
function timeToFirstToken(model: CatalogModel): number {
  return model.simulation?.time_to_first_token_ms ?? Number.MAX_SAFE_INTEGER;
}

/**
 * The error when no candidate can serve the traits: the first single need no model meets, or,
 * when each need alone is met by some model, the combination.
 */
function noCapableModel(candidates: CatalogModel[], traits: Traits): GatewayError {
  const unsupported = (param: string | undefined, message: string) => GatewayError.of('unsupported_parameter', message, { param });
  const none = (test: (model: CatalogModel) => boolean) => !candidates.some(test);
  if (traits.needsTools && none((model) => model.capabilities.tools)) return unsupported('tools', 'No model of this gateway supports tools.');
  if (traits.needsVision && none((model) => model.capabilities.vision)) return unsupported('messages', 'No model of this gateway supports image inputs.');
  if (traits.needsJsonMode && none((model) => model.capabilities.json_mode))
    return unsupported('response_format', 'No model of this gateway supports JSON mode (response_format).');
  if (traits.stream && none((model) => model.capabilities.streaming)) return unsupported('stream', 'No model of this gateway supports streaming.');
  const largestOutput = Math.max(0, ...candidates.map((model) => model.max_output_tokens));
  if (traits.maxTokens > largestOutput)
    return unsupported(
      'max_tokens',
      `max_tokens is too large: ${traits.maxTokens}. No model of this gateway supports more than ${largestOutput} completion tokens.`,
    );
  const largestWindow = Math.max(0, ...candidates.map((model) => model.context_window));
  const requested = traits.promptTokens + traits.maxTokens;
  if (requested > largestWindow) {
    return GatewayError.of(
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
