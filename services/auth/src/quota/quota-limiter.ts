import {
  authKeys,
  checkQuota,
  DEFAULT_AUTH_PREFIX,
  parseReservationId,
  plansArgument,
  settleQuota,
  WINDOW_MS,
  type CheckQuotaDecision,
  type PlansArgument,
  type Settlement,
  type TeamQuotaState,
  type WindowLimitState,
} from '@gateway/keyspace';
import type { RedisClient } from '@gateway/redis';
import { KeyStore, LAST_USED_INTERVAL_MS } from '../keys/key-store.js';
import { plansSource, type BudgetLimit, type Limit, type PlansSource, type PlanTable } from '../shared/limits.js';
import { PLAN_NAMES, type PlanName } from './plans.js';

export { PENDING_MAX_AGE_MS, WINDOW_MS, type Settlement } from '@gateway/keyspace';

/** What a reservation id chosen by the caller may look like (a UUID, say). */
export const RESERVATION_PART_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The state of one window limit after a decision; limit -1 means unlimited. */
export type WindowState = WindowLimitState;

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

/** A team's state after a decision about one of its keys (windows and budgets as a key's). */
export interface TeamDecisionState {
  teamId: string;
  requests: WindowState;
  tokens: WindowState;
  budget: BudgetDecisionState;
  /** The team's model allow-list; undefined: every model. */
  allowedModels?: string[];
}

/** The outcome of a quota check. */
export type QuotaDecision =
  | { kind: 'unknown_key' }
  | { kind: 'revoked'; keyId: string }
  | {
      kind: 'allow' | 'deny_requests' | 'deny_tokens' | 'too_large' | 'over_budget' | 'model_not_allowed';
      keyId: string;
      plan: PlanName;
      routingPolicy: string;
      requests: WindowState;
      tokens: WindowState;
      /** On a rate-limit denial: ms until this request would be allowed; over a daily budget, ms until the UTC day ends; 0 over a monthly one. */
      retryAfterMs: number;
      budget: BudgetDecisionState;
      /** Set when a reservation or a budget hold exists for this request: the handle to settle it with. */
      reservationId: string;
      /**
       * Whether a request that says nothing about fallbacks uses the catalog's chain: the key's
       * override when set, else its plan's `catalog_fallbacks`.
       */
      catalogFallbacks: boolean;
      /** Every model allow-list that applies to the key (its own, then its team's), each its entries; none: every model. */
      modelAllowLists: string[][];
      /** On a denial: true when the key's team's limit or budget refused, not the key's own. */
      deniedByTeam: boolean;
      /** The key's team's state; absent for a key without a team. */
      team?: TeamDecisionState;
      /** Whether the request log keeps the request's bodies: the key's `log_bodies` or its team's. */
      logBodies: boolean;
    };

/**
 * How a check decides: 'reserve' counts and reserves, 'peek' only reports; with a model, the
 * allow-lists are checked first; with a cost bound (pico-USD), an allowed request holds it against
 * the key's and its team's budgets until settled.
 */
export type CheckMode = 'reserve' | 'peek' | { mode: 'reserve' | 'peek'; model: string; costBoundPicoUsd?: number };

/** Thrown when a reservation id is malformed. */
export class ReservationIdError extends Error {
  constructor() {
    super('A reservation id is "<key id>:<id>" as CheckKey returned it.');
    this.name = 'ReservationIdError';
  }
}

/** Options of a limiter; tests pass a clock and a prefix. */
export interface QuotaLimiterOptions {
  prefix?: string;
  /** A clock in Unix ms; default Redis's own TIME, one clock for every replica. */
  now?: () => number;
  /** Where the keys are found (their secret's index, cached); default a KeyStore on the same prefix. */
  keys?: KeyStore;
  /** The quota window's length (AUTH_QUOTA_WINDOW_SECONDS); default WINDOW_MS, one minute. */
  windowMs?: number;
  /**
   * Whether the Redis master of a key is full (@gateway/redis's RedisMemoryWatch): a reservation
   * is then refused with RedisFullError rather than written past maxmemory. None: never refused.
   */
  memory?: { readonly anyFull: boolean; isFullFor(key: string): boolean };
}

/**
 * Thrown instead of a reservation while the key's Redis master is over its maxmemory: the caller
 * answers UNAVAILABLE (503 with Retry-After at the edge) until Redis has room.
 */
export class RedisFullError extends Error {
  constructor() {
    super('Redis is full (over its maxmemory): no reservation can be written until it has room.');
    this.name = 'RedisFullError';
  }
}

function limitArgument(limit: Limit | BudgetLimit): number {
  return limit === 'unlimited' ? -1 : limit;
}

/** The decision's kind of each status the script answers for a live key. */
const DECISION_KINDS: Record<CheckQuotaDecision['status'], Exclude<QuotaDecision['kind'], 'unknown_key' | 'revoked'>> = {
  allow: 'allow',
  already_reserved: 'allow',
  deny_requests: 'deny_requests',
  deny_tokens: 'deny_tokens',
  too_large: 'too_large',
  over_budget: 'over_budget',
  model_not_allowed: 'model_not_allowed',
};

function teamDecisionState(team: TeamQuotaState): TeamDecisionState {
  return {
    teamId: team.teamId,
    requests: team.requests,
    tokens: team.tokens,
    budget: {
      limited: team.budgeted,
      remainingPicoUsd: team.remainingPicoUsd,
      spentTodayPicoUsd: team.spentDayPicoUsd,
      spentMonthPicoUsd: team.spentMonthPicoUsd,
      monthlyExhausted: team.monthExhausted,
    },
    ...(team.allowedModels && { allowedModels: team.allowedModels }),
  };
}

/**
 * Keys and quotas decided in Redis, one script call per decision (EVALSHA, loaded on first use):
 * the lookup, the revocation check, both limits and the reservation happen atomically, so any
 * number of auth replicas share exact limits.
 */
export class QuotaLimiter {
  private readonly prefix: string;
  private readonly windowMs: number;
  private readonly keys: KeyStore;
  private readonly plans: PlansSource;
  /** The script's plans argument of the table it was built from; rebuilt when the plans are reloaded. */
  private builtPlans: { table: PlanTable; argument: PlansArgument } | undefined;

  /** `plans`: a fixed table, or a reloaded plans file whose `current` table each decision reads. */
  constructor(
    private readonly redis: RedisClient,
    plans: PlanTable | PlansSource,
    private readonly options: QuotaLimiterOptions = {},
  ) {
    this.prefix = options.prefix ?? DEFAULT_AUTH_PREFIX;
    this.windowMs = options.windowMs ?? WINDOW_MS;
    this.keys = options.keys ?? new KeyStore(redis, { prefix: this.prefix });
    this.plans = plansSource(plans);
  }

  /** The plans of one decision with their script argument, built once per table. */
  private currentPlans(): { table: PlanTable; argument: PlansArgument } {
    const table = this.plans.current;
    if (this.builtPlans?.table !== table) {
      const argument = plansArgument(
        Object.fromEntries(
          PLAN_NAMES.map((name) => [
            name,
            {
              requests: limitArgument(table[name].requests_per_minute),
              tokens: limitArgument(table[name].tokens_per_minute),
              dailyBudget: limitArgument(table[name].daily_budget),
              monthlyBudget: limitArgument(table[name].monthly_budget),
            },
          ]),
        ),
      );
      this.builtPlans = { table, argument };
    }
    return this.builtPlans;
  }

  /**
   * Decides about the key whose secret has the SHA-256 `secretHash`: with mode 'reserve', counts
   * one request and reserves `reserveTokens` under `reservationPart` (a repeat with the same part
   * reserves nothing more); with 'peek', only reports the state. One script call on the key id's
   * slot (its team's, for a member of a team, whose limits, budgets and allow-list it applies too)
   * once the secret's key id and team are known (they are cached; else one HMGET first). With a
   * model, a model outside the key's allow-list or its team's is refused (model_not_allowed) before
   * anything is counted. With a cost bound, a budget refuses (over_budget) a request whose bound
   * does not fit in what is left of it less what the requests in flight hold, and an allowed
   * request holds its bound until settled (see @gateway/keyspace's budget-holds).
   */
  async check(secretHash: string, reservationPart: string, reserveTokens: number, how: CheckMode): Promise<QuotaDecision> {
    const { mode, model, costBoundPicoUsd = 0 } = typeof how === 'string' ? { mode: how, model: '' } : how;
    const location = await this.keys.locate(secretHash);
    if (!location) return { kind: 'unknown_key' };
    const { keyId, teamId } = location;
    // A peek writes nothing (at most the key's last use, once a minute) and is still answered.
    const memory = this.options.memory;
    if (mode === 'reserve' && memory?.anyFull && memory.isFullFor(authKeys(this.prefix).record(keyId, teamId))) throw new RedisFullError();
    const plans = this.currentPlans();
    const reply = await checkQuota(this.redis, {
      keyId,
      teamId,
      prefix: this.prefix,
      chargeId: reservationPart,
      reserveTokens,
      costBoundPicoUsd,
      mode,
      ...(this.options.now && { nowMs: this.options.now() }),
      windowMs: this.windowMs,
      lastUsedIntervalMs: LAST_USED_INTERVAL_MS,
      plans: plans.argument,
      model,
    });
    if (reply.status === 'unknown_key') {
      this.keys.forget(secretHash);
      return { kind: 'unknown_key' };
    }
    if (reply.status === 'revoked') return { kind: 'revoked', keyId };
    const kind = DECISION_KINDS[reply.status];
    const teamLimited = reply.team !== undefined && (reply.team.requests.limit >= 0 || reply.team.tokens.limit >= 0);
    // A budget hold is settled (released) by the same handle as a window's reservation.
    const held = costBoundPicoUsd > 0 && (reply.budgeted || reply.team?.budgeted === true);
    const limited = reply.requests.limit >= 0 || reply.tokens.limit >= 0 || teamLimited || held;
    const plan = reply.plan as PlanName;
    return {
      kind,
      keyId,
      plan,
      routingPolicy: reply.routingPolicy,
      requests: reply.requests,
      tokens: reply.tokens,
      retryAfterMs: reply.retryAfterMs,
      reservationId: kind === 'allow' && mode === 'reserve' && limited ? `${keyId}:${reservationPart}` : '',
      catalogFallbacks: reply.catalogFallbacks === 'plan' ? plans.table[plan].catalog_fallbacks : reply.catalogFallbacks === 'on',
      budget: {
        limited: reply.budgeted,
        remainingPicoUsd: reply.remainingPicoUsd,
        spentTodayPicoUsd: reply.spentDayPicoUsd,
        spentMonthPicoUsd: reply.spentMonthPicoUsd,
        monthlyExhausted: reply.monthExhausted,
      },
      modelAllowLists: reply.modelAllowLists,
      deniedByTeam: reply.limitedBy === 'team',
      logBodies: reply.logBodies,
      ...(reply.team && { team: teamDecisionState(reply.team) }),
    };
  }

  /** Settles a reservation with the tokens actually used; idempotent. */
  async settle(reservationId: string, actualTokens: number): Promise<Settlement> {
    const reservation = parseReservationId(reservationId);
    if (!reservation) throw new ReservationIdError();
    return settleQuota(this.redis, {
      reservation,
      teamId: await this.keys.teamOf(reservation.keyId),
      prefix: this.prefix,
      actualTokens,
      ...(this.options.now && { nowMs: this.options.now() }),
      windowMs: this.windowMs,
    });
  }
}
