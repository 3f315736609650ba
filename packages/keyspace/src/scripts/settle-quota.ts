import type { RedisClient } from '@gateway/redis';
import { authKeys, budgetHoldsKeyName, spendKeyName, teamBudgetHoldsKeyName, teamSpendKeyName, windowKeyList } from '../keys.js';
import { PENDING_MAX_AGE_MS, type ReservationId } from '../window.js';
import { SCRIPTS } from './registry.js';
import { namedArguments, namedReply, numberField, oneOf, runScript } from './script.js';

/** How a settlement went, as the script names it. */
export const SETTLEMENT_OUTCOMES = ['settled', 'already_settled', 'unknown_reservation'] as const;

/** The outcome of a settlement. */
export interface Settlement {
  outcome: (typeof SETTLEMENT_OUTCOMES)[number];
  /** Tokens charged (positive) or refunded (negative). */
  deltaTokens: number;
  tokensInWindow: number;
}

/** What one settlement asks of the script. */
export interface SettleQuotaInput {
  reservation: ReservationId;
  /** The key's team; absent or '': none. */
  teamId?: string;
  /** auth's key prefix. */
  prefix: string;
  actualTokens: number;
  /** Unix ms; absent: Redis's TIME. */
  nowMs?: number;
  windowMs: number;
}

/** Decodes the script's name/value reply. */
export function decodeSettlement(reply: unknown): Settlement {
  const named = namedReply(reply);
  return {
    outcome: oneOf(named, 'outcome', SETTLEMENT_OUTCOMES),
    deltaTokens: numberField(named, 'delta_tokens'),
    tokensInWindow: numberField(named, 'tokens_in_window'),
  };
}

/**
 * Settles one reservation with the tokens actually used, in the key's window and its team's, and
 * releases the request's budget holds (it ended without a usage event); idempotent
 * (scripts/settle-quota.lua).
 */
export async function settleQuota(redis: RedisClient, input: SettleQuotaInput): Promise<Settlement> {
  const names = authKeys(input.prefix);
  const { keyId } = input.reservation;
  const { teamId } = input;
  const own = [...windowKeyList(names.window(keyId, teamId)), spendKeyName(keyId, teamId), budgetHoldsKeyName(keyId, teamId)];
  const reply = await runScript(
    redis,
    teamId ? SCRIPTS.settleTeamQuota : SCRIPTS.settleQuota,
    teamId ? [...own, ...windowKeyList(names.teamWindow(teamId)), teamSpendKeyName(teamId), teamBudgetHoldsKeyName(teamId)] : own,
    namedArguments({
      charge: input.reservation.chargeId,
      key_id: keyId,
      actual: Math.max(0, Math.ceil(input.actualTokens)),
      now: input.nowMs ?? '',
      window_ms: input.windowMs,
      pending_max_age_ms: PENDING_MAX_AGE_MS,
    }),
  );
  return decodeSettlement(reply);
}
