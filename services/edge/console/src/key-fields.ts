/**
 * The key forms' limit and budget fields as text: empty means "the plan's", `unlimited` lifts
 * the limit or budget, anything else must be a number. The allowed models field is a list of model
 * ids and `prefix*` patterns separated by commas or spaces; empty means every model. Checked here so a typo is explained next to
 * the form; the admin API checks again and its word is final.
 */
import type { Budget, Key, KeyChange, Limit } from './admin-api';

/** A field the user filled in wrongly. */
export class FieldError extends Error {}

/** The text of a limit field: a whole number of requests or tokens per minute, or `unlimited`. */
export function parseLimit(text: string, label: string): Limit | undefined {
  const value = text.trim().toLowerCase();
  if (value === '') return undefined;
  if (value === 'unlimited') return 'unlimited';
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new FieldError(`${label} must be a whole number or "unlimited".`);
  return Number(value);
}

/** The text of a budget field: USD with up to cents and beyond (`12.5`, `0.25`), or `unlimited`. */
export function parseBudget(text: string, label: string): Budget | undefined {
  const value = text.trim().toLowerCase().replace(/^\$/, '');
  if (value === '') return undefined;
  if (value === 'unlimited') return 'unlimited';
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(value)) throw new FieldError(`${label} must be an amount in USD or "unlimited".`);
  return Number(value);
}

/** The text of the allowed models field: ids and `prefix*` patterns; null (empty) for every model. */
export function parseAllowedModels(text: string): string[] | null {
  const entries = text.split(/[\s,]+/).filter((entry) => entry !== '');
  if (entries.length === 0) return null;
  const misplaced = entries.find((entry) => entry.indexOf('*') !== entry.length - 1 && entry.includes('*'));
  if (misplaced) throw new FieldError(`Allowed models: "${misplaced}" may have "*" only as its last character.`);
  return entries;
}

/** The limit, budget and allowed models fields keys and teams both have, as typed. */
export interface LimitFields {
  requestsPerMinute: string;
  tokensPerMinute: string;
  dailyBudget: string;
  monthlyBudget: string;
  /** Model ids and `prefix*` patterns; empty: every model. */
  allowedModels: string;
  /** Whether the request log keeps the bodies of the key's requests. */
  logBodies: boolean;
}

/** The form's text of every field of a key. */
export interface KeyFields extends LimitFields {
  name: string;
  /** `unknown` for a plan the edge does not know; the form offers only the ones it does. */
  plan: Key['plan'];
}

/** The fields of an edit form for a key: its own overrides, empty where it follows its plan. */
export function fieldsOfKey(key: Key): KeyFields {
  const text = (value: number | string | undefined) => (value === undefined ? '' : String(value));
  return {
    name: key.name,
    plan: key.plan,
    requestsPerMinute: text(key.overrides.requests_per_minute),
    tokensPerMinute: text(key.overrides.tokens_per_minute),
    dailyBudget: text(key.overrides.daily_budget_usd),
    monthlyBudget: text(key.overrides.monthly_budget_usd),
    allowedModels: (key.allowed_models ?? []).join(', '),
    logBodies: key.log_bodies,
  };
}

/** The parsed limit and budget fields; undefined where the form leaves it to the plan. */
export function parseFields(fields: LimitFields) {
  return {
    requestsPerMinute: parseLimit(fields.requestsPerMinute, 'Requests per minute'),
    tokensPerMinute: parseLimit(fields.tokensPerMinute, 'Tokens per minute'),
    dailyBudget: parseBudget(fields.dailyBudget, 'Daily budget'),
    monthlyBudget: parseBudget(fields.monthlyBudget, 'Monthly budget'),
    allowedModels: parseAllowedModels(fields.allowedModels),
  };
}

/**
 * The parsed fields as the admin API names them; `value` maps each limit and budget (undefined:
 * left empty), so a team, which has no plan, can send null for none.
 */
export function apiSettings<Value>(fields: LimitFields, value: (parsed: Limit | Budget | undefined) => Value) {
  const parsed = parseFields(fields);
  return {
    limits: { requests_per_minute: value(parsed.requestsPerMinute), tokens_per_minute: value(parsed.tokensPerMinute) },
    budgets: { daily_usd: value(parsed.dailyBudget), monthly_usd: value(parsed.monthlyBudget) },
    allowed_models: parsed.allowedModels,
    log_bodies: fields.logBodies,
  };
}

/** Only what settings set, as a creation sends them: no null or undefined limit or budget, no empty group, no allow-list for every model. */
export function setOnly<Value>(settings: ReturnType<typeof apiSettings<Value>>) {
  const present = (group: Record<string, Value>) => {
    const entries = Object.entries(group).filter(([, value]) => value !== undefined && value !== null);
    return entries.length > 0 ? (Object.fromEntries(entries) as { [field: string]: NonNullable<Value> }) : undefined;
  };
  const limits = present(settings.limits);
  const budgets = present(settings.budgets);
  return {
    ...(limits && { limits }),
    ...(budgets && { budgets }),
    ...(settings.allowed_models && { allowed_models: settings.allowed_models }),
    ...(settings.log_bodies && { log_bodies: true }),
  };
}

/**
 * The PATCH body that turns `before` into `after`: only what changed, with null for a limit or
 * budget that goes back to the plan's. Undefined when nothing changed.
 */
export function keyChange(before: KeyFields, after: KeyFields): KeyChange | undefined {
  const old = parseFields(before);
  const next = parseFields(after);
  const change: KeyChange = {};
  if (after.plan !== before.plan && after.plan !== 'unknown') change.plan = after.plan;
  if (after.name.trim() !== before.name.trim()) change.name = after.name.trim();
  const limits: NonNullable<KeyChange['limits']> = {};
  if (next.requestsPerMinute !== old.requestsPerMinute) limits.requests_per_minute = next.requestsPerMinute ?? null;
  if (next.tokensPerMinute !== old.tokensPerMinute) limits.tokens_per_minute = next.tokensPerMinute ?? null;
  if (Object.keys(limits).length > 0) change.limits = limits;
  const budgets: NonNullable<KeyChange['budgets']> = {};
  if (next.dailyBudget !== old.dailyBudget) budgets.daily_usd = next.dailyBudget ?? null;
  if (next.monthlyBudget !== old.monthlyBudget) budgets.monthly_usd = next.monthlyBudget ?? null;
  if (Object.keys(budgets).length > 0) change.budgets = budgets;
  if (JSON.stringify(next.allowedModels) !== JSON.stringify(old.allowedModels)) change.allowed_models = next.allowedModels;
  if (after.logBodies !== before.logBodies) change.log_bodies = after.logBodies;
  return Object.keys(change).length > 0 ? change : undefined;
}
