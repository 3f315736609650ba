/**
 * Limits and budgets as keys, teams, plans and the quota decision hold them, and as their
 * gateway.auth.v1 messages. Types only from @gateway/proto, no gRPC runtime (the CLI loads it).
 */
import type { Budget, MinuteLimit, PlanName } from '@gateway/proto';

/** A per-minute limit, or no limit. */
export type Limit = number | 'unlimited';

/** A spend limit in micro-USD (10^-6 USD), or none. */
export type BudgetLimit = number | 'unlimited';

/** Micro-USD in one USD. */
export const MICRO_USD_PER_USD = 1_000_000;

/** The budgets of one plan, or of one key's overrides, by period. */
export const BUDGET_FIELDS = ['daily_budget', 'monthly_budget'] as const;
export type BudgetField = (typeof BUDGET_FIELDS)[number];

/**
 * An amount of USD as a budget in micro-USD: a positive finite number of USD, rounded to the
 * micro-dollar, at least one; undefined for anything else (so callers name the bad field).
 */
export function usdToBudget(value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return undefined;
  const micro = Math.round(value * MICRO_USD_PER_USD);
  return micro >= 1 && Number.isSafeInteger(micro) ? micro : undefined;
}

/** The limits and defaults of one plan. */
export interface PlanLimits {
  requests_per_minute: Limit;
  tokens_per_minute: Limit;
  /** Spend per UTC day, in micro-USD; 'unlimited' when the file sets none. */
  daily_budget: BudgetLimit;
  /** Spend per UTC month, in micro-USD; 'unlimited' when the file sets none. */
  monthly_budget: BudgetLimit;
  /**
   * Whether a request that says nothing about fallbacks uses the catalog's fallback chain of its
   * model (a key may override it); false when the file leaves it out.
   */
  catalog_fallbacks: boolean;
}

/** Every plan's limits and defaults, validated (quota/plans.ts reads them from the plans file). */
export type PlanTable = Readonly<Record<PlanName, Readonly<PlanLimits>>>;

/**
 * Plans that may change while auth runs (a ReloadableFile of @gateway/config fits): a decision or
 * an answer reads `current` once, so it is made with one table throughout.
 */
export interface PlansSource {
  readonly current: PlanTable;
}

/** The plans in use of a fixed table or a reloaded one. */
export function plansSource(plans: PlanTable | PlansSource): PlansSource {
  return 'current' in plans ? (plans as PlansSource) : { current: plans as PlanTable };
}

/** A per-minute limit as a MinuteLimit message. */
export function toMinuteLimit(limit: Limit): MinuteLimit {
  return limit === 'unlimited' ? { unlimited: true } : { per_minute: limit };
}

/** A budget as a Budget message. */
export function toBudget(budget: BudgetLimit): Budget {
  return budget === 'unlimited' ? { unlimited: true } : { micro_usd: budget };
}
