import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isPlanName, PLAN_NAMES, type PlanName } from '@gateway/proto';
import { BUDGET_FIELDS, usdToBudget, type PlanLimits, type PlanTable } from '../shared/limits.js';

export { isPlanName, PLAN_NAMES, type PlanName, planFromProto, planToProto } from '@gateway/proto';

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
