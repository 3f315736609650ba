/**
 * A key as auth stores it: its public facts (never its secret), what a creation may set and what a
 * change may, the checks both the gRPC service and the CLI apply to them, a change as the writes to
 * the stored hash, and the reading of a stored hash back (an incomplete one is no key at all). The
 * store itself is key-store.ts.
 */
import { isPlanName, type PlanName } from '@gateway/proto';
import { validateAllowLists } from '../shared/allow-lists.js';
import { KeyInputError, MAX_KEY_NAME_LENGTH } from '../shared/input-error.js';
import { BUDGET_FIELDS, type BudgetLimit, type Limit } from '../shared/limits.js';

/** The public facts of a key as stored; never its secret. */
export interface StoredKey {
  key_id: string;
  plan: PlanName;
  name: string;
  created_at_ms: number;
  /** 0 when never used. Updated at most once a minute, so it is precise to a minute. */
  last_used_at_ms: number;
  revoked: boolean;
  /** Replaces the plan's requests per minute for this key; absent: the plan's. */
  requests_per_minute_override?: Limit;
  /** Replaces the plan's tokens per minute for this key; absent: the plan's. */
  tokens_per_minute_override?: Limit;
  /** The key's default routing policy, forwarded to the router; '' for none. */
  routing_policy: string;
  /** Replaces the plan's catalog_fallbacks for this key; absent: the plan's. */
  catalog_fallbacks_override?: boolean;
  /** Replaces the plan's daily budget (micro-USD) for this key; absent: the plan's. */
  daily_budget_override?: BudgetLimit;
  /** Replaces the plan's monthly budget (micro-USD) for this key; absent: the plan's. */
  monthly_budget_override?: BudgetLimit;
  /** The models the key may use: ids and `prefix*` patterns; absent: every model; empty: none. */
  allowed_models?: string[];
  /** The MCP tools the key may use: namespaced tools, servers and `prefix*` patterns; absent: every tool; empty: none. */
  allowed_mcp_tools?: string[];
  /** The key's team, fixed when it was created; absent: none. */
  team_id?: string;
  /** Whether the request log keeps the bodies of the key's requests; absent: off. */
  log_bodies?: boolean;
}

/** The settings of a key that a creation may give: each absent one stays as the plan has it (or none). */
type KeySettings = Pick<
  StoredKey,
  | 'requests_per_minute_override'
  | 'tokens_per_minute_override'
  | 'routing_policy'
  | 'catalog_fallbacks_override'
  | 'daily_budget_override'
  | 'monthly_budget_override'
  | 'allowed_models'
  | 'allowed_mcp_tools'
>;

/** What may be set when a key is created; absent overrides mean the plan's limits. */
export interface NewKey extends Partial<KeySettings> {
  plan: PlanName;
  name?: string;
  secret?: string;
  /** The team the key joins for good; absent or '': none. */
  team_id?: string;
  /** Whether the request log keeps the bodies of the key's requests; absent: off. */
  log_bodies?: boolean;
}

/**
 * Changes to a key; an absent field stays as it is. An override of null removes it (the plan's
 * limit applies again); a routing policy of '' removes it; a catalog fallbacks override of null
 * removes it (the plan's default applies again).
 */
export interface KeyChanges {
  plan?: PlanName;
  name?: string;
  requests_per_minute_override?: Limit | null;
  tokens_per_minute_override?: Limit | null;
  routing_policy?: string;
  catalog_fallbacks_override?: boolean | null;
  /** A budget override of null removes it (the plan's budget applies again). */
  daily_budget_override?: BudgetLimit | null;
  monthly_budget_override?: BudgetLimit | null;
  /** An allow-list of null removes it (every model allowed again). */
  allowed_models?: string[] | null;
  /** An MCP tool allow-list of null removes it (every tool allowed again). */
  allowed_mcp_tools?: string[] | null;
  /** Whether the request log keeps the bodies of the key's requests. */
  log_bodies?: boolean;
  revoked?: true;
}

/** What a routing policy looks like: a short name the router understands. */
export const ROUTING_POLICY_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

export const OVERRIDE_FIELDS = ['requests_per_minute_override', 'tokens_per_minute_override', 'daily_budget_override', 'monthly_budget_override'] as const;
const BUDGET_OVERRIDE_FIELDS = BUDGET_FIELDS.map((field) => `${field}_override` as const);

/** Checks the values both the gRPC service and the CLI accept; throws KeyInputError. */
export function validateKeyChanges(input: KeyChanges): void {
  if (input.name !== undefined && input.name.length > MAX_KEY_NAME_LENGTH)
    throw new KeyInputError('name', `A key name has at most ${MAX_KEY_NAME_LENGTH} characters.`);
  if (input.routing_policy !== undefined && input.routing_policy !== '' && !ROUTING_POLICY_PATTERN.test(input.routing_policy)) {
    throw new KeyInputError('routing_policy', 'A routing policy is 1 to 64 letters, digits, ".", "_", ":" or "-".');
  }
  for (const field of OVERRIDE_FIELDS) {
    const value = input[field];
    if (value === undefined || value === null || value === 'unlimited') continue;
    const budget = (BUDGET_OVERRIDE_FIELDS as readonly string[]).includes(field);
    if (!Number.isSafeInteger(value) || value <= 0)
      throw new KeyInputError(
        field,
        budget ? `${field} must be a positive number of micro-USD or "unlimited".` : `${field} must be a positive integer or "unlimited".`,
      );
  }
  const fallbacks = input.catalog_fallbacks_override;
  if (fallbacks !== undefined && fallbacks !== null && typeof fallbacks !== 'boolean')
    throw new KeyInputError('catalog_fallbacks_override', 'catalog_fallbacks_override must be true or false.');
  validateAllowLists(input);
}

/** A stored allow-list (a JSON array of strings); undefined when absent or unreadable. */
function parseAllowList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  try {
    const list: unknown = JSON.parse(value);
    return Array.isArray(list) && list.every((entry) => typeof entry === 'string') ? list : undefined;
  } catch {
    return undefined;
  }
}

function parseLimit(value: string | undefined): Limit | undefined {
  if (value === undefined) return undefined;
  if (value === 'unlimited') return 'unlimited';
  const number = Number(value);
  return Number.isSafeInteger(number) && number > 0 ? number : undefined;
}

/**
 * Reads a stored hash; undefined for a missing or incomplete one (no key id, unknown plan), which
 * callers treat as no key at all rather than guessing.
 */
export function parseStoredKey(hash: Record<string, string>): StoredKey | undefined {
  if (!hash.key_id || !hash.plan || !isPlanName(hash.plan)) return undefined;
  const key: StoredKey = {
    key_id: hash.key_id,
    plan: hash.plan,
    name: hash.name ?? '',
    created_at_ms: Number(hash.created_at_ms ?? 0),
    last_used_at_ms: Number(hash.last_used_at_ms ?? 0),
    revoked: hash.revoked === '1',
    routing_policy: hash.routing_policy ?? '',
    ...(hash.team_id && { team_id: hash.team_id }),
    ...(hash.log_bodies === '1' && { log_bodies: true }),
  };
  const requests = parseLimit(hash.requests_per_minute_override);
  const tokens = parseLimit(hash.tokens_per_minute_override);
  if (requests !== undefined) key.requests_per_minute_override = requests;
  if (tokens !== undefined) key.tokens_per_minute_override = tokens;
  const daily = parseLimit(hash.daily_budget_override);
  const monthly = parseLimit(hash.monthly_budget_override);
  if (daily !== undefined) key.daily_budget_override = daily;
  if (monthly !== undefined) key.monthly_budget_override = monthly;
  if (hash.catalog_fallbacks_override === '1' || hash.catalog_fallbacks_override === '0')
    key.catalog_fallbacks_override = hash.catalog_fallbacks_override === '1';
  const allowed = parseAllowList(hash.allowed_models);
  if (allowed) key.allowed_models = allowed;
  const tools = parseAllowList(hash.allowed_mcp_tools);
  if (tools) key.allowed_mcp_tools = tools;
  return key;
}

/** Changes as the writes to a stored hash: the fields to set (as stored) and the fields to delete. */
export function recordChanges(changes: KeyChanges): { sets: Record<string, string>; deletes: string[] } {
  const deletes: string[] = [];
  const sets: Record<string, string> = {};
  if (changes.plan !== undefined) sets.plan = changes.plan;
  if (changes.name !== undefined) sets.name = changes.name;
  if (changes.revoked) sets.revoked = '1';
  if (changes.routing_policy !== undefined) {
    if (changes.routing_policy === '') deletes.push('routing_policy');
    else sets.routing_policy = changes.routing_policy;
  }
  for (const field of OVERRIDE_FIELDS) {
    const value = changes[field];
    if (value === null) deletes.push(field);
    else if (value !== undefined) sets[field] = String(value);
  }
  if (changes.catalog_fallbacks_override === null) deletes.push('catalog_fallbacks_override');
  else if (changes.catalog_fallbacks_override !== undefined) sets.catalog_fallbacks_override = changes.catalog_fallbacks_override ? '1' : '0';
  if (changes.allowed_models === null) deletes.push('allowed_models');
  else if (changes.allowed_models !== undefined) sets.allowed_models = JSON.stringify(changes.allowed_models);
  if (changes.allowed_mcp_tools === null) deletes.push('allowed_mcp_tools');
  else if (changes.allowed_mcp_tools !== undefined) sets.allowed_mcp_tools = JSON.stringify(changes.allowed_mcp_tools);
  if (changes.log_bodies === false) deletes.push('log_bodies');
  else if (changes.log_bodies === true) sets.log_bodies = '1';
  return { sets, deletes };
}
