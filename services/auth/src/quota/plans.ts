import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isPlanName, PLAN_NAMES, type PlanName } from '@gateway/proto';

export { isPlanName, PLAN_NAMES, type PlanName, planFromProto, planToProto } from '@gateway/proto';

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

/** Every plan's limits and defaults, validated. */
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

/** The plans file shipped with the service. */
export const DEFAULT_PLANS_PATH: string = new URL('../../plans.yaml', import.meta.url).pathname;

/** Thrown when a plans file is invalid; the message names the file and exactly what is wrong. */
export class PlansError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlansError';
  }
}

const LIMIT_FIELDS = ['requests_per_minute', 'tokens_per_minute'] as const;
const PLAN_FIELDS: readonly string[] = [...LIMIT_FIELDS, 'catalog_fallbacks', 'daily_budget_usd', 'monthly_budget_usd'];

/**
 * The YAML parser, loaded on the first plans parsed: the plan names and budget conversions above
 * serve the CLI's commands that never read the plans (list, get, help), which then start without it.
 */
let yaml: typeof import('yaml') | undefined;

/** Parses and validates plans text; source names the file in error messages. */
export function parsePlans(text: string, source: string): PlanTable {
  yaml ??= createRequire(import.meta.url)('yaml') as typeof import('yaml');
  let document: unknown;
  try {
    document = yaml.parse(text);
  } catch (error) {
    throw new PlansError(`${source}: invalid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  if (!isMapping(document)) throw new PlansError(`${source}: expected a mapping of plan names to limits`);
  for (const name of Object.keys(document)) {
    if (!isPlanName(name)) throw new PlansError(`${source}: unknown plan "${name}" (expected ${PLAN_NAMES.join(', ')})`);
  }
  const table = {} as Record<PlanName, PlanLimits>;
  for (const name of PLAN_NAMES) {
    const entry = document[name];
    if (entry === undefined) throw new PlansError(`${source}: plan "${name}" is missing`);
    if (!isMapping(entry)) throw new PlansError(`${source}: ${name}: expected a mapping with ${LIMIT_FIELDS.join(' and ')}`);
    for (const field of Object.keys(entry)) {
      if (!PLAN_FIELDS.includes(field)) throw new PlansError(`${source}: ${name}: unknown field "${field}"`);
    }
    const fallbacks = entry.catalog_fallbacks === undefined ? false : entry.catalog_fallbacks;
    if (typeof fallbacks !== 'boolean') throw new PlansError(`${source}: ${name}.catalog_fallbacks must be true or false, got ${JSON.stringify(fallbacks)}`);
    const limits = { catalog_fallbacks: fallbacks } as PlanLimits;
    for (const field of BUDGET_FIELDS) {
      const value = entry[`${field}_usd`];
      const budget = value === undefined || value === 'unlimited' ? 'unlimited' : usdToBudget(value);
      if (budget === undefined)
        throw new PlansError(
          `${source}: ${name}.${field}_usd must be a positive amount of USD (at least 0.000001) or "unlimited", got ${JSON.stringify(value)}`,
        );
      limits[field] = budget;
    }
    for (const field of LIMIT_FIELDS) {
      const value = entry[field];
      if (value === undefined) throw new PlansError(`${source}: ${name}.${field} is missing`);
      if (value !== 'unlimited' && !(typeof value === 'number' && Number.isSafeInteger(value) && value > 0)) {
        throw new PlansError(`${source}: ${name}.${field} must be a positive integer or "unlimited", got ${JSON.stringify(value)}`);
      }
      limits[field] = value;
    }
    table[name] = Object.freeze(limits);
  }
  return Object.freeze(table);
}

/** Reads and validates a plans file. */
export function loadPlans(path: string = DEFAULT_PLANS_PATH): PlanTable {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new PlansError(`${path}: cannot read: ${(error as Error).message}`);
  }
  return parsePlans(text, path);
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
