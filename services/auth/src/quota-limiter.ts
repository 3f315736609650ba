import {
  DAY_MS,
  DEFAULT_QUOTA_PREFIX,
  PENDING_MAX_AGE_MS,
  RESERVATION_PATTERN,
  SPEND_LUA,
  spendKeyName,
  WINDOW_LUA,
  WINDOW_MS,
  windowKeyNames,
} from '@gateway/quota';
import type { RedisClient } from '@gateway/redis';
import { KeyStore, LAST_USED_INTERVAL_MS } from './key-store.js';
import { PLAN_NAMES, type BudgetLimit, type Limit, type PlanName, type PlanTable } from './plans.js';

export { PENDING_MAX_AGE_MS, WINDOW_MS } from '@gateway/quota';

/** What a reservation id chosen by the caller may look like (a UUID, say). */
export const RESERVATION_PART_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

// The whole CheckKey decision in one round trip: look the key up, check it is live, record its
// use (once a minute), then decide and reserve atomically: the budgets first (metering's spend
// hash of the key, in the same slot), then the per-minute limits.
// KEYS: the key's record, then its window R, T, H, P, then its spend hash S (one slot: the key
// id's). ARGV: '' (unused), reservation id, reserve tokens, now ('' = Redis TIME), window ms,
// pending max age ms, mode ('reserve' | 'peek'), then (plan, requests, tokens, daily budget,
// monthly budget) quintuples with -1 for unlimited, budgets in micro-USD.
// Returns {status} for 0 unknown, {1, key_id} revoked, else {status, key_id, plan, policy,
// requestLimit, requestsInWindow, requestReset, tokenLimit, tokensInWindow, tokenReset, retryAfter,
// fallbacks, budgeted, remainingPico, spentDayPico, spentMonthPico, monthExhausted} with status 2
// allow, 3 over requests, 4 over tokens, 5 too large, 6 allow (already reserved), 7 over budget;
// fallbacks the key's catalog fallbacks override: 1 on, 0 off, -1 none (the plan's, which the
// caller knows), so the override travels with the one lookup; budgeted 1 when a budget applies.
const CHECK_LUA = `${WINDOW_LUA}${SPEND_LUA}
local record = redis.call('HGETALL', KEYS[1])
local key = {}
for i = 1, #record, 2 do key[record[i]] = record[i + 1] end
if not key.key_id then return {0} end
if key.revoked == '1' then return {1, key.key_id} end
local requestLimit, tokenLimit, dailyBudget, monthlyBudget
for i = 8, #ARGV, 5 do
  if ARGV[i] == key.plan then
    requestLimit = tonumber(ARGV[i + 1]); tokenLimit = tonumber(ARGV[i + 2])
    dailyBudget = tonumber(ARGV[i + 3]); monthlyBudget = tonumber(ARGV[i + 4])
  end
end
if requestLimit == nil then return {0} end
local function override(value, default)
  if value == nil then return default end
  if value == 'unlimited' then return -1 end
  return tonumber(value) or default
end
requestLimit = override(key.requests_per_minute_override, requestLimit)
tokenLimit = override(key.tokens_per_minute_override, tokenLimit)
dailyBudget = override(key.daily_budget_override, dailyBudget)
monthlyBudget = override(key.monthly_budget_override, monthlyBudget)
local policy = key.routing_policy or ''
local fallbacks = -1
if key.catalog_fallbacks_override == '1' then fallbacks = 1 elseif key.catalog_fallbacks_override == '0' then fallbacks = 0 end
local now = clock(ARGV[4])
if now - (tonumber(key.last_used_at_ms) or 0) >= ${LAST_USED_INTERVAL_MS} then redis.call('HSET', KEYS[1], 'last_used_at_ms', now) end

-- Budgets: a request may start while what the key spent today and this month (as metered so
-- far) is below each budget; remaining is the smaller of what is left (micro-USD budgets against
-- pico-USD spend).
local budgeted, remaining, spentDay, spentMonth, monthExhausted = 0, 0, 0, 0, 0
if dailyBudget >= 0 or monthlyBudget >= 0 then
  budgeted = 1
  spentDay, spentMonth = spent(KEYS[6], now)
  remaining = -1
  if dailyBudget >= 0 then remaining = dailyBudget * 1000000 - spentDay end
  if monthlyBudget >= 0 then
    local left = monthlyBudget * 1000000 - spentMonth
    if left <= 0 then monthExhausted = 1 end
    if remaining < 0 or left < remaining then remaining = left end
  end
  if remaining < 0 then remaining = 0 end
end
local function answer(status, requestLimit, count, requestReset, tokenLimit, total, tokenReset, retry)
  return {status, key.key_id, key.plan, policy, requestLimit, count, requestReset, tokenLimit, total, tokenReset, retry, fallbacks, budgeted, remaining, spentDay, spentMonth, monthExhausted}
end
if budgeted == 1 and remaining <= 0 and ARGV[7] == 'reserve' then
  local retry = 0
  if monthExhausted == 0 then retry = ${DAY_MS} - now % ${DAY_MS} end
  return answer(7, requestLimit, 0, 0, tokenLimit, 0, 0, retry)
end
if requestLimit < 0 and tokenLimit < 0 then return answer(2, -1, 0, 0, -1, 0, 0, 0) end

local window, pendingMaxAge = tonumber(ARGV[5]), tonumber(ARGV[6])
local R, T, H, P = KEYS[2], KEYS[3], KEYS[4], KEYS[5]
expire(R, T, H, P, now, window, pendingMaxAge)
local id, reserve = ARGV[2], tonumber(ARGV[3])
local count = redis.call('ZCARD', R)
local total = tonumber(redis.call('HGET', H, 'total')) or 0
local status, retry = 2, 0
if ARGV[7] == 'reserve' then
  if redis.call('HEXISTS', H, 't:' .. id) == 1 then
    status = 6
  elseif tokenLimit >= 0 and reserve > tokenLimit then
    status = 5
  else
    local requestWait, tokenWait = -1, -1
    if requestLimit >= 0 and count >= requestLimit then
      local entry = redis.call('ZRANGE', R, count - requestLimit, count - requestLimit, 'WITHSCORES')
      requestWait = tonumber(entry[2]) + window - now
    end
    if tokenLimit >= 0 and total + reserve > tokenLimit then
      local need = total + reserve - tokenLimit
      local entries = redis.call('ZRANGE', T, 0, -1, 'WITHSCORES')
      local freed = 0
      tokenWait = window
      for i = 1, #entries, 2 do
        freed = freed + (tonumber(redis.call('HGET', H, 't:' .. entries[i])) or 0)
        if freed >= need then tokenWait = tonumber(entries[i + 1]) + window - now; break end
      end
    end
    if requestWait >= 0 or tokenWait >= 0 then
      if requestWait >= tokenWait then status = 3; retry = requestWait else status = 4; retry = tokenWait end
    else
      redis.call('ZADD', R, now, id)
      redis.call('ZADD', T, now, id)
      redis.call('HSET', H, 't:' .. id, reserve)
      redis.call('HINCRBY', H, 'total', reserve)
      count = count + 1
      total = total + reserve
      touch(R, T, H, P, window + pendingMaxAge)
    end
  end
end
return answer(status, requestLimit, count, newestAge(R, now, window), tokenLimit, total, newestAge(T, now, window), retry)
`;

// Settles one charge. KEYS: the key's window R, T, H, P. ARGV: charge id, actual tokens, now
// ('' = Redis TIME), window ms, pending max age ms.
// Returns {outcome, delta, tokensInWindow}: outcome 1 settled, 2 already settled, 3 unknown.
const SETTLE_LUA = `${WINDOW_LUA}
return settleCharge(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[2]), clock(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))
`;

/** The state of one per-minute limit after a decision; limit -1 means unlimited. */
export interface WindowState {
  limit: number;
  /** Counted in the current window (requests, or tokens charged). */
  used: number;
  /** Milliseconds until everything counted has left the window. */
  resetMs: number;
}

/** A key's spend against its budgets, as the decision saw it; pico-USD. */
export interface BudgetDecisionState {
  /** Whether a daily or monthly budget applies to the key. */
  limited: boolean;
  /** The smaller of what is left of the day's and the month's budget (0 once one is spent). */
  remainingPicoUsd: number;
  spentTodayPicoUsd: number;
  spentMonthPicoUsd: number;
  /** Whether the month's budget is spent (the day ending cannot help). */
  monthlyExhausted: boolean;
}

/** The outcome of a quota check. */
export type QuotaDecision =
  | { kind: 'unknown_key' }
  | { kind: 'revoked'; keyId: string }
  | {
      kind: 'allow' | 'deny_requests' | 'deny_tokens' | 'too_large' | 'over_budget';
      keyId: string;
      plan: PlanName;
      routingPolicy: string;
      requests: WindowState;
      tokens: WindowState;
      /** On a rate-limit denial: ms until this request would be allowed; over a daily budget, ms until the UTC day ends; 0 over a monthly one. */
      retryAfterMs: number;
      budget: BudgetDecisionState;
      /** Set when a reservation exists for this request: the handle to settle it with. */
      reservationId: string;
      /**
       * Whether a request that says nothing about fallbacks uses the catalog's chain: the key's
       * override when set, else its plan's `catalog_fallbacks`.
       */
      catalogFallbacks: boolean;
    };

/** The outcome of a settlement. */
export interface Settlement {
  outcome: 'settled' | 'already_settled' | 'unknown_reservation';
  /** Tokens charged (positive) or refunded (negative). */
  deltaTokens: number;
  tokensInWindow: number;
}

/** Thrown when a reservation id is malformed. */
export class ReservationIdError extends Error {
  constructor() {
    super('A reservation id is "<key id>:<id>" as CheckKey returned it.');
    this.name = 'ReservationIdError';
  }
}

interface LimiterCommands {
  gatewayCheckQuota(...keysAndArgs: string[]): Promise<Array<string | number>>;
  gatewaySettleQuota(...args: string[]): Promise<number[]>;
}

/** Options of a limiter; tests pass a clock and a prefix. */
export interface QuotaLimiterOptions {
  prefix?: string;
  /** A clock in Unix ms; default Redis's own TIME, one clock for every replica. */
  now?: () => number;
  /** Where the keys are found (their secret's index, cached); default a KeyStore on the same prefix. */
  keys?: KeyStore;
}

function limitArgument(limit: Limit | BudgetLimit): string {
  return limit === 'unlimited' ? '-1' : String(limit);
}

/**
 * Keys and quotas decided in Redis, one script call per decision (EVALSHA, loaded on first use):
 * the lookup, the revocation check, both limits and the reservation happen atomically, so any
 * number of auth replicas share exact limits.
 */
export class QuotaLimiter {
  private readonly prefix: string;
  private readonly planArguments: string[];
  private readonly plans: PlanTable;
  private readonly redis: RedisClient & LimiterCommands;
  private readonly keys: KeyStore;

  constructor(
    redis: RedisClient,
    plans: PlanTable,
    private readonly options: QuotaLimiterOptions = {},
  ) {
    this.prefix = options.prefix ?? DEFAULT_QUOTA_PREFIX;
    this.plans = plans;
    this.keys = options.keys ?? new KeyStore(redis, { prefix: this.prefix });
    this.planArguments = PLAN_NAMES.flatMap((name) => [
      name,
      limitArgument(plans[name].requests_per_minute),
      limitArgument(plans[name].tokens_per_minute),
      limitArgument(plans[name].daily_budget),
      limitArgument(plans[name].monthly_budget),
    ]);
    if (!('gatewayCheckQuota' in redis)) {
      redis.defineCommand('gatewayCheckQuota', { numberOfKeys: 6, lua: CHECK_LUA });
      redis.defineCommand('gatewaySettleQuota', { numberOfKeys: 4, lua: SETTLE_LUA });
    }
    this.redis = redis as RedisClient & LimiterCommands;
  }

  /**
   * Decides about the key whose secret has the SHA-256 `secretHash`: with mode 'reserve', counts
   * one request and reserves `reserveTokens` under `reservationPart` (a repeat with the same part
   * reserves nothing more); with 'peek', only reports the state. One script call on the key id's
   * slot once the secret's key id is known (it is cached; else one HGET first).
   */
  async check(secretHash: string, reservationPart: string, reserveTokens: number, mode: 'reserve' | 'peek'): Promise<QuotaDecision> {
    const keyId = await this.keys.keyIdOf(secretHash);
    if (!keyId) return { kind: 'unknown_key' };
    const now = this.options.now ? String(this.options.now()) : '';
    const reply = await this.redis.gatewayCheckQuota(
      this.keys.recordName(keyId),
      ...windowKeyNames(this.prefix, keyId),
      spendKeyName(keyId),
      '',
      reservationPart,
      String(Math.max(0, Math.ceil(reserveTokens))),
      now,
      String(WINDOW_MS),
      String(PENDING_MAX_AGE_MS),
      mode,
      ...this.planArguments,
    );
    const status = Number(reply[0]);
    if (status === 0) {
      this.keys.forget(secretHash);
      return { kind: 'unknown_key' };
    }
    if (status === 1) return { kind: 'revoked', keyId };
    const [
      ,
      ,
      plan,
      policy,
      requestLimit,
      requestsUsed,
      requestReset,
      tokenLimit,
      tokensUsed,
      tokenReset,
      retryAfter,
      fallbacks,
      budgeted,
      remaining,
      spentDay,
      spentMonth,
      monthExhausted,
    ] = reply;
    const kind = status === 3 ? 'deny_requests' : status === 4 ? 'deny_tokens' : status === 5 ? 'too_large' : status === 7 ? 'over_budget' : 'allow';
    const limited = Number(requestLimit) >= 0 || Number(tokenLimit) >= 0;
    return {
      kind,
      keyId,
      plan: plan as PlanName,
      routingPolicy: String(policy),
      requests: { limit: Number(requestLimit), used: Number(requestsUsed), resetMs: Number(requestReset) },
      tokens: { limit: Number(tokenLimit), used: Number(tokensUsed), resetMs: Number(tokenReset) },
      retryAfterMs: Number(retryAfter),
      reservationId: kind === 'allow' && mode === 'reserve' && limited ? `${keyId}:${reservationPart}` : '',
      catalogFallbacks: Number(fallbacks) === -1 ? this.plans[plan as PlanName].catalog_fallbacks : Number(fallbacks) === 1,
      budget: {
        limited: Number(budgeted) === 1,
        remainingPicoUsd: Number(remaining ?? 0),
        spentTodayPicoUsd: Number(spentDay ?? 0),
        spentMonthPicoUsd: Number(spentMonth ?? 0),
        monthlyExhausted: Number(monthExhausted) === 1,
      },
    };
  }

  /** Settles a reservation with the tokens actually used; idempotent. */
  async settle(reservationId: string, actualTokens: number): Promise<Settlement> {
    const match = RESERVATION_PATTERN.exec(reservationId);
    if (!match) throw new ReservationIdError();
    const now = this.options.now ? String(this.options.now()) : '';
    const [outcome, delta, inWindow] = await this.redis.gatewaySettleQuota(
      ...windowKeyNames(this.prefix, match[1]!),
      match[2]!,
      String(Math.max(0, Math.ceil(actualTokens))),
      now,
      String(WINDOW_MS),
      String(PENDING_MAX_AGE_MS),
    );
    return {
      outcome: outcome === 1 ? 'settled' : outcome === 2 ? 'already_settled' : 'unknown_reservation',
      deltaTokens: Number(delta),
      tokensInWindow: Number(inWindow),
    };
  }
}
