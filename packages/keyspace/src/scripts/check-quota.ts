import type { RedisClient } from '@gateway/redis';
import { BUDGET_HOLD_MAX_AGE_MS } from '../budget-holds.js';
import { authKeys, budgetHoldsKeyName, spendKeyName, teamBudgetHoldsKeyName, teamSpendKeyName, windowKeyList } from '../keys.js';
import { SPEND_TTL_MS } from '../spend.js';
import { PENDING_MAX_AGE_MS } from '../window.js';
import { SCRIPTS } from './registry.js';
import { namedArguments, namedReply, numberField, oneOf, runScript } from './script.js';

/** A plan's limits as the decision applies them: -1 unlimited; budgets in micro-USD. */
export interface PlanQuota {
  requests: number;
  tokens: number;
  dailyBudget: number;
  monthlyBudget: number;
}

/** The plans argument of checkQuota: encode once (plansArgument), pass with every call. */
export type PlansArgument = string & { readonly __plans: unique symbol };

/** Encodes the plans for the script (a JSON object plan -> [requests, tokens, daily, monthly]). */
export function plansArgument(plans: Readonly<Record<string, PlanQuota>>): PlansArgument {
  const table = Object.fromEntries(Object.entries(plans).map(([name, plan]) => [name, [plan.requests, plan.tokens, plan.dailyBudget, plan.monthlyBudget]]));
  return JSON.stringify(table) as PlansArgument;
}

/** What one CheckKey decision asks of the script. */
export interface CheckQuotaInput {
  keyId: string;
  /** The key's team (from its secret's index); absent or '': none. */
  teamId?: string;
  /** auth's key prefix. */
  prefix: string;
  /** The charge id the reservation is kept under (the caller's part of the reservation id). */
  chargeId: string;
  reserveTokens: number;
  /**
   * The most the request can cost, in pico-USD: held against the key's and its team's budgets when
   * allowed (and refused, over_budget, when it does not fit in what is left of one), until settled.
   * Absent or 0: nothing held; the budgets then refuse only once spent (with what others hold).
   */
  costBoundPicoUsd?: bigint | number;
  /** 'reserve' counts the request and reserves; 'peek' only reports. */
  mode: 'reserve' | 'peek';
  /** Unix ms; absent: Redis's TIME. */
  nowMs?: number;
  windowMs: number;
  /** How often the record's last_used_at_ms may be written. */
  lastUsedIntervalMs: number;
  plans: PlansArgument;
  /** The catalog id the request names, checked against the key's allow-lists; absent or '': none. */
  model?: string;
}

/** The status of a decision, as the script names it. */
export const CHECK_QUOTA_STATUSES = [
  'unknown_key',
  'revoked',
  'allow',
  /** Allowed: a reservation under this charge id existed already (nothing more reserved). */
  'already_reserved',
  'deny_requests',
  'deny_tokens',
  'too_large',
  'over_budget',
  /** The model asked for is outside an allow-list that applies; nothing counted or reserved. */
  'model_not_allowed',
] as const;
/** The status of a decision. */
export type CheckQuotaStatus = (typeof CHECK_QUOTA_STATUSES)[number];

/** The state of one window limit after a decision; limit -1 means unlimited. */
export interface WindowLimitState {
  limit: number;
  /** Counted in the current window (requests, or tokens charged). */
  used: number;
  /** Milliseconds until everything counted has left the window. */
  resetMs: number;
}

/** A live key's decision, as the script answered it. */
export interface CheckQuotaDecision {
  status: Exclude<CheckQuotaStatus, 'unknown_key' | 'revoked'>;
  keyId: string;
  plan: string;
  routingPolicy: string;
  requests: WindowLimitState;
  tokens: WindowLimitState;
  retryAfterMs: number;
  /** The key's catalog fallbacks override: 'plan' when it has none. */
  catalogFallbacks: 'on' | 'off' | 'plan';
  budgeted: boolean;
  remainingPicoUsd: number;
  spentDayPicoUsd: number;
  spentMonthPicoUsd: number;
  monthExhausted: boolean;
  /** Every allow-list that applies (the key's, then its team's), each its entries; none: every model allowed. */
  modelAllowLists: string[][];
  /** Whether the request log keeps the request's bodies: the key's `log_bodies` or its team's. */
  logBodies: boolean;
  /** On a denial: whether the key's own limit, budget or list refused ('key') or its team's ('team'); absent on an allow. */
  limitedBy?: 'key' | 'team';
  /** The key's team, when it has one: its windows' and budgets' state. */
  team?: TeamQuotaState;
}

/** A team's state after a decision about one of its keys. */
export interface TeamQuotaState {
  teamId: string;
  requests: WindowLimitState;
  tokens: WindowLimitState;
  budgeted: boolean;
  remainingPicoUsd: number;
  spentDayPicoUsd: number;
  spentMonthPicoUsd: number;
  monthExhausted: boolean;
  /** The team's model allow-list; undefined: every model. */
  allowedModels?: string[];
}

function decodeTeam(named: Record<string, string | number>): TeamQuotaState | undefined {
  const teamId = String(named.team_id ?? '');
  if (!teamId) return undefined;
  const allowed = String(named.team_allowed_models ?? '');
  return {
    teamId,
    requests: {
      limit: numberField(named, 'team_request_limit'),
      used: numberField(named, 'team_requests_in_window'),
      resetMs: numberField(named, 'team_request_reset_ms'),
    },
    tokens: {
      limit: numberField(named, 'team_token_limit'),
      used: numberField(named, 'team_tokens_in_window'),
      resetMs: numberField(named, 'team_token_reset_ms'),
    },
    budgeted: numberField(named, 'team_budgeted') === 1,
    remainingPicoUsd: numberField(named, 'team_remaining_pico_usd'),
    spentDayPicoUsd: numberField(named, 'team_spent_day_pico_usd'),
    spentMonthPicoUsd: numberField(named, 'team_spent_month_pico_usd'),
    monthExhausted: numberField(named, 'team_month_exhausted') === 1,
    ...(allowed && { allowedModels: JSON.parse(allowed) as string[] }),
  };
}

/** The script's answer. */
export type CheckQuotaReply = { status: 'unknown_key' } | { status: 'revoked'; keyId: string } | CheckQuotaDecision;

/** Decodes the script's name/value reply. */
export function decodeCheckQuota(reply: unknown): CheckQuotaReply {
  const named = namedReply(reply);
  const status = oneOf(named, 'status', CHECK_QUOTA_STATUSES);
  if (status === 'unknown_key') return { status };
  if (status === 'revoked') return { status, keyId: String(named.key_id) };
  const team = decodeTeam(named);
  return {
    status,
    keyId: String(named.key_id),
    plan: String(named.plan),
    routingPolicy: String(named.routing_policy ?? ''),
    requests: { limit: numberField(named, 'request_limit'), used: numberField(named, 'requests_in_window'), resetMs: numberField(named, 'request_reset_ms') },
    tokens: { limit: numberField(named, 'token_limit'), used: numberField(named, 'tokens_in_window'), resetMs: numberField(named, 'token_reset_ms') },
    retryAfterMs: numberField(named, 'retry_after_ms'),
    catalogFallbacks: oneOf(named, 'catalog_fallbacks', ['on', 'off', 'plan'] as const),
    budgeted: numberField(named, 'budgeted') === 1,
    remainingPicoUsd: numberField(named, 'remaining_pico_usd'),
    spentDayPicoUsd: numberField(named, 'spent_day_pico_usd'),
    spentMonthPicoUsd: numberField(named, 'spent_month_pico_usd'),
    monthExhausted: numberField(named, 'month_exhausted') === 1,
    modelAllowLists: allowListsOf(named.model_allow_lists),
    logBodies: numberField(named, 'log_bodies') === 1,
    ...(named.limited_by === 'team' || named.limited_by === 'key' ? { limitedBy: named.limited_by } : {}),
    ...(team && { team }),
  };
}

/** The script's keys: the key's, then its team's when it has one (all in one slot). */
function checkQuotaKeys(input: CheckQuotaInput): string[] {
  const keys = authKeys(input.prefix);
  const { keyId, teamId } = input;
  const own = [keys.record(keyId, teamId), ...windowKeyList(keys.window(keyId, teamId)), spendKeyName(keyId, teamId), budgetHoldsKeyName(keyId, teamId)];
  if (!teamId) return own;
  return [...own, keys.team(teamId), ...windowKeyList(keys.teamWindow(teamId)), teamSpendKeyName(teamId), teamBudgetHoldsKeyName(teamId)];
}

/** The script's model_allow_lists (a JSON array of arrays of strings); absent: none. */
function allowListsOf(value: string | number | undefined): string[][] {
  if (value === undefined) return [];
  const lists: unknown = JSON.parse(String(value));
  if (!Array.isArray(lists) || !lists.every((list) => Array.isArray(list))) throw new Error('unexpected model_allow_lists in a script reply');
  return lists.map((list: unknown[]) => list.map(String));
}

/** A cost bound as the script reads it: a whole number of pico-USD in decimal, '0' for none. */
function costBoundArgument(bound: bigint | number | undefined): string {
  if (bound === undefined) return '0';
  const whole = typeof bound === 'bigint' ? bound : Number.isFinite(bound) ? BigInt(Math.ceil(bound)) : 0n;
  return whole > 0n ? whole.toString() : '0';
}

/**
 * One CheckKey decision: the key's record, its window and its spend hash (and its team's record,
 * window and spend, for a member of a team) in one script call on the key's slot
 * (scripts/check-quota.lua).
 */
export async function checkQuota(redis: RedisClient, input: CheckQuotaInput): Promise<CheckQuotaReply> {
  const reply = await runScript(
    redis,
    input.teamId ? SCRIPTS.checkTeamQuota : SCRIPTS.checkQuota,
    checkQuotaKeys(input),
    namedArguments({
      reservation: input.chargeId,
      reserve: Math.max(0, Math.ceil(input.reserveTokens)),
      bound: costBoundArgument(input.costBoundPicoUsd),
      hold_ms: BUDGET_HOLD_MAX_AGE_MS,
      spend_ttl_ms: SPEND_TTL_MS,
      now: input.nowMs ?? '',
      window_ms: input.windowMs,
      pending_max_age_ms: PENDING_MAX_AGE_MS,
      mode: input.mode,
      last_used_interval_ms: input.lastUsedIntervalMs,
      plans: input.plans,
      model: input.model ?? '',
    }),
  );
  return decodeCheckQuota(reply);
}
