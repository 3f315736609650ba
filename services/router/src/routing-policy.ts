import { GatewayError } from '@gateway/grpc';
import { QUALITY_TIERS, type QualityTier } from '@gateway/catalog';

/**
 * How "auto" turns a score into a model, as the caller (RouteRequest.policy) or the key's default
 * asks. The grammar, case-insensitive, spaces ignored:
 *
 * | policy | meaning |
 * |---|---|
 * | `` (empty), `balanced` | the score picks a tier (the model file's thresholds); cheapest model of that tier |
 * | `cheapest` | the cheapest capable model, whatever the score |
 * | `fastest` | the lowest tier, then the lowest time to first token, then price |
 * | `best` | the highest tier, the priciest within it |
 * | `score>=X` (X in 0..1) | RouteLLM's two-model routing with the caller's threshold: premium when the score is at least X, else economy |
 * | `tier>=T` (T economy, standard, premium) | balanced, but never a model below tier T (a quality floor) |
 */
export type RoutingPolicy =
  | { kind: 'balanced' | 'cheapest' | 'fastest' | 'best'; name: string }
  | { kind: 'score'; threshold: number; name: string }
  | { kind: 'tier'; floor: QualityTier; name: string };

/** The fixed policy names, for error messages and documentation. */
export const NAMED_POLICIES = ['balanced', 'cheapest', 'fastest', 'best'] as const;

/** The default policy, when neither the request nor the key names one. */
export const DEFAULT_POLICY: RoutingPolicy = { kind: 'balanced', name: 'balanced' };

/**
 * Reads a policy string; empty means balanced. Anything else outside the grammar is the caller's
 * error: INVALID_ARGUMENT `invalid_value` with param `policy`.
 */
export function readPolicy(policy: string | undefined): RoutingPolicy {
  const text = (policy ?? '').replace(/\s+/g, '').toLowerCase();
  if (text === '') return DEFAULT_POLICY;
  if ((NAMED_POLICIES as readonly string[]).includes(text)) return { kind: text as (typeof NAMED_POLICIES)[number], name: text };
  const threshold = /^score>=(0(?:\.\d+)?|1(?:\.0+)?|\.\d+)$/.exec(text);
  if (threshold) {
    const value = Number(threshold[1]);
    return { kind: 'score', threshold: value, name: `score>=${value}` };
  }
  const floor = /^tier>=(economy|standard|premium)$/.exec(text);
  if (floor) return { kind: 'tier', floor: floor[1] as QualityTier, name: `tier>=${floor[1]}` };
  throw GatewayError.of(
    'invalid_value',
    `Unknown routing policy \`${policy?.trim()}\`; expected one of ${NAMED_POLICIES.join(', ')}, score>=<0..1> or tier>=<economy|standard|premium>.`,
    { param: 'policy' },
  );
}

/**
 * The policy as a metric label: bounded, so a threshold is counted as `score_threshold` and a
 * floor as `tier_floor`, never with the caller's number in the label.
 */
export function policyLabel(policy: RoutingPolicy): string {
  if (policy.kind === 'score') return 'score_threshold';
  if (policy.kind === 'tier') return `tier_floor_${policy.floor}`;
  return policy.kind;
}

/** Score thresholds of the balanced policy (from the model file). */
export interface TierThresholds {
  standard: number;
  premium: number;
}

/** The tier a policy asks for at a given score; undefined for policies that ignore the score. */
export function wantedTier(policy: RoutingPolicy, score: number, thresholds: TierThresholds): QualityTier | undefined {
  const balanced: QualityTier = score >= thresholds.premium ? 'premium' : score >= thresholds.standard ? 'standard' : 'economy';
  switch (policy.kind) {
    case 'balanced':
      return balanced;
    case 'score':
      return score >= policy.threshold ? 'premium' : 'economy';
    case 'tier':
      return QUALITY_TIERS.indexOf(balanced) >= QUALITY_TIERS.indexOf(policy.floor) ? balanced : policy.floor;
    case 'best':
      return 'premium';
    case 'cheapest':
    case 'fastest':
      return undefined;
  }
}
