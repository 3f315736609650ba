import type { RedisClient } from '@gateway/redis';
import { bucketPlacement, type BucketPlacement, type BucketRetention } from '../buckets.js';
import {
  authKeys,
  budgetHoldsKeyName,
  DEFAULT_AUTH_PREFIX,
  dedupKey,
  keyModelTotalsKey,
  keyTotalsKey,
  spendKeyName,
  teamBudgetHoldsKeyName,
  teamSpendKeyName,
  teamTotalsKey,
  windowKeyList,
} from '../keys.js';
import { spendDayField, spendMonthField, utcDay, utcMonth } from '../spend.js';
import { PENDING_MAX_AGE_MS } from '../window.js';
import { SCRIPTS } from './registry.js';
import { namedArguments, namedReply, oneOf, runScript } from './script.js';

/** One usage event as the record script meters it. */
export interface UsageRecord {
  /** The usage stream it came from: its de-duplication record is kept per stream. */
  stream: string;
  eventId: string;
  /** Its stream sequence, by which its de-duplication record is pruned. */
  sequence: number;
  keyId: string;
  /** The key's team (the event's team_id); '' or absent: none. */
  teamId?: string;
  modelId: string;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  /** Prompt tokens written to the provider's cache (a part of promptTokens, apart from cachedTokens). */
  cacheWriteTokens: number;
  costPicoUsd: bigint;
  /** When the edge received the request (Unix ms): the buckets and the spend day it counts in. */
  atMs: number;
  failed: boolean;
  fellBack: boolean;
  /** Answered from the response cache (UsageEvent.cache.status `hit`): counted in cache_hits; default false. */
  cacheHit?: boolean;
  /** What the cached answer cost when it was made (the cost the hit saved), pico-USD; default 0. */
  savedCostPicoUsd?: bigint;
  /** The request as the latest-requests list shows it (JSON); '' for none. */
  recent: string;
}

/** The quota charge an event settles, in its own key's window. */
export interface UsageSettlement {
  chargeId: string;
  actualTokens: number;
  /** auth's key prefix. */
  prefix: string;
}

/** How long what the script writes is kept. */
export interface UsageRetention {
  /** De-duplication records up to this stream sequence may go (0: none). */
  pruneThrough: number;
  dedupTtlMs: number;
  buckets: BucketRetention;
  spendTtlMs: number;
  recentKept: number;
  recentTtlMs: number;
}

/** What one record call asks of the script. */
export interface RecordUsageInput {
  event: UsageRecord;
  settlement?: UsageSettlement;
  retention: UsageRetention;
}

/** Whether the event was new and counted, or already metered (nothing changed). */
export type RecordOutcome = 'metered' | 'duplicate';

/** Decodes the script's name/value reply. */
export function decodeRecordUsage(reply: unknown): RecordOutcome {
  return oneOf(namedReply(reply), 'outcome', ['metered', 'duplicate'] as const);
}

/** The script's keys, in its order; the first, the de-duplication set, is what replicas are awaited on. */
function recordKeys(event: UsageRecord, prefix: string, buckets: BucketPlacement): string[] {
  const { keyId, teamId } = event;
  const own = [
    dedupKey(event.stream, keyId, teamId),
    keyTotalsKey(keyId, teamId),
    keyModelTotalsKey(keyId, event.modelId, teamId),
    ...windowKeyList(authKeys(prefix).window(keyId, teamId)),
    spendKeyName(keyId, teamId),
    buckets.hourly,
    buckets.daily,
    buckets.recent,
    buckets.models,
    budgetHoldsKeyName(keyId, teamId),
  ];
  if (!teamId) return own;
  return [...own, ...windowKeyList(authKeys(prefix).teamWindow(teamId)), teamSpendKeyName(teamId), teamTotalsKey(teamId), teamBudgetHoldsKeyName(teamId)];
}

function recordArguments({ event, settlement, retention }: RecordUsageInput, buckets: BucketPlacement): string[] {
  return namedArguments({
    event_id: event.eventId,
    sequence: event.sequence,
    prompt_tokens: event.promptTokens,
    completion_tokens: event.completionTokens,
    cached_tokens: event.cachedTokens,
    cache_write_tokens: event.cacheWriteTokens,
    cost_pico_usd: event.costPicoUsd.toString(),
    model_id: event.modelId,
    errors: event.failed ? 1 : 0,
    fallbacks: event.fellBack ? 1 : 0,
    cache_hits: event.cacheHit ? 1 : 0,
    saved_cost_pico_usd: (event.savedCostPicoUsd ?? 0n).toString(),
    charge: settlement?.chargeId ?? '',
    key_id: event.keyId,
    actual_tokens: Math.max(0, Math.ceil(settlement?.actualTokens ?? 0)),
    pending_max_age_ms: PENDING_MAX_AGE_MS,
    prune_through: Math.max(0, retention.pruneThrough),
    dedup_ttl_ms: retention.dedupTtlMs,
    hour_field: buckets.hourField,
    hourly_expires_at_ms: buckets.hourlyExpiresAtMs,
    day_field: buckets.dayField,
    daily_expires_at_ms: buckets.dailyExpiresAtMs,
    models_ttl_ms: retention.buckets.dailyMs,
    spend_day_field: spendDayField(event.atMs),
    spend_month_field: spendMonthField(event.atMs),
    spend_day: utcDay(event.atMs),
    spend_month: utcMonth(event.atMs),
    spend_ttl_ms: retention.spendTtlMs,
    recent: event.recent,
    recent_kept: retention.recentKept,
    recent_ttl_ms: retention.recentTtlMs,
  });
}

/**
 * Meters one usage event atomically (scripts/record-usage.lua), settling its charge when given;
 * resolves the outcome and the de-duplication set written (the key to await replicas on).
 */
export async function recordUsage(redis: RedisClient, input: RecordUsageInput): Promise<{ outcome: RecordOutcome; dedupKey: string }> {
  const { event } = input;
  const buckets = bucketPlacement({ keyId: event.keyId, teamId: event.teamId }, event.modelId, event.atMs, input.retention.buckets);
  const keys = recordKeys(event, input.settlement?.prefix ?? DEFAULT_AUTH_PREFIX, buckets);
  const reply = await runScript(redis, event.teamId ? SCRIPTS.recordTeamUsage : SCRIPTS.recordUsage, keys, recordArguments(input, buckets));
  return { outcome: decodeRecordUsage(reply), dedupKey: keys[0]! };
}
