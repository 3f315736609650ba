import type { Redis } from 'ioredis';
import { picoUsdToUsd } from '@gateway/catalog';
import { PENDING_MAX_AGE_MS, RESERVATION_PATTERN, WINDOW_LUA, WINDOW_MS } from '@gateway/quota';

/**
 * Metered usage in Redis:
 *   `metering:key:<key_id>`      hash of running totals per API key
 *   `metering:model:<model_id>`  hash of running totals per model
 *   `metering:dedup:<stream>`    sorted set of the events metered from one usage stream: member the
 *                                event id, score its stream sequence; the de-duplication record,
 *                                kept only while the event can still come back (see pruneMetered)
 * Totals are Redis integers (64-bit signed): cost_pico_usd overflows beyond 9.2 million USD per
 * key or model, far beyond what one deployment bills between resets.
 *
 * Why a set pruned below the consumer's acknowledgement floor rather than a record per event with
 * a time to live: an event comes back in two ways only. JetStream redelivers a message that was
 * metered but not acknowledged (a metering replica died between the two), with the same stream
 * sequence, for as long as it is unacknowledged: however long metering is down, so no time to
 * live is safe. And a publisher that lost an acknowledgement publishes the event again: the
 * stream drops it within its duplicate window, and these records catch a later copy for as long
 * as they are retained past the floor. Once every message up to a sequence is acknowledged (the
 * durable consumer's ack floor), none of them is delivered again, so their records can go: memory
 * is bounded by the events in flight plus the retention, never by time.
 */
export const KEY_TOTALS_PREFIX = 'metering:key:';
/** Prefix of the per-model totals hashes. */
export const MODEL_TOTALS_PREFIX = 'metering:model:';
/** Prefix of the de-duplication sets, one per usage stream. */
export const DEDUP_PREFIX = 'metering:dedup:';

/** The de-duplication set of a usage stream. */
export function dedupKey(stream: string): string {
  return DEDUP_PREFIX + stream;
}

/** What one event adds to the totals of its key and its model. */
export interface EventUsage {
  key_id: string;
  model_id: string;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cost_pico_usd: bigint;
}

/** Running totals of a key or a model. */
export interface UsageTotals {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cost_pico_usd: bigint;
  /** cost_pico_usd in USD, for display. */
  cost_usd: number;
}

// Adds an event to the totals only if it is new, remembers it, and settles the request's quota
// reservation with the tokens it used: all or nothing, so a redelivered event (or a crash between
// writes) can neither count nor settle twice, nor half.
// KEYS: the de-duplication set, key totals, model totals.
// ARGV: event id, stream sequence, prompt, completion, cached, cost_pico_usd, then the settlement:
// quota prefix, key id, charge id ('' = none), actual tokens, window ms, pending max age ms.
// Returns 1 when metered, 0 when the event was already metered.
const RECORD_SCRIPT = `${WINDOW_LUA}
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
for i = 2, 3 do
  redis.call('HINCRBY', KEYS[i], 'requests', 1)
  redis.call('HINCRBY', KEYS[i], 'prompt_tokens', ARGV[3])
  redis.call('HINCRBY', KEYS[i], 'completion_tokens', ARGV[4])
  redis.call('HINCRBY', KEYS[i], 'cached_tokens', ARGV[5])
  redis.call('HINCRBY', KEYS[i], 'cost_pico_usd', ARGV[6])
end
if ARGV[9] ~= '' then
  settleCharge(ARGV[7], ARGV[8], ARGV[9], tonumber(ARGV[10]), clock(''), tonumber(ARGV[11]), tonumber(ARGV[12]))
end
return 1
`;

/** The quota reservation a usage event settles: see UsageEvent.reservation_id. */
export interface EventSettlement {
  /** `<key id>:<charge id>`, as CheckKey returned it. */
  reservationId: string;
  /** The tokens the request used: its usage's total. */
  actualTokens: number;
  /** auth's key prefix (DEFAULT_QUOTA_PREFIX unless a test chooses another). */
  prefix: string;
}

interface MeteringCommands {
  gatewayRecordUsage(dedup: string, keyTotals: string, modelTotals: string, ...args: string[]): Promise<number>;
}

/**
 * Meters one event of a usage stream atomically, settling its reservation when it names one;
 * resolves true when it was new and counted, false when it had already been metered (nothing
 * changed). Rejects when Redis fails: then nothing changed either. `sequence` is the event's
 * stream sequence, by which its record is pruned. A malformed reservation id is not settled.
 */
export async function recordEvent(redis: Redis, stream: string, eventId: string, sequence: number, usage: EventUsage, settlement?: EventSettlement): Promise<boolean> {
  if (!('gatewayRecordUsage' in redis)) redis.defineCommand('gatewayRecordUsage', { numberOfKeys: 3, lua: RECORD_SCRIPT });
  const charge = settlement ? RESERVATION_PATTERN.exec(settlement.reservationId) : null;
  const result = await (redis as Redis & MeteringCommands).gatewayRecordUsage(
    dedupKey(stream), KEY_TOTALS_PREFIX + usage.key_id, MODEL_TOTALS_PREFIX + usage.model_id,
    eventId, String(sequence),
    String(usage.prompt_tokens), String(usage.completion_tokens), String(usage.cached_tokens), usage.cost_pico_usd.toString(),
    settlement?.prefix ?? '', charge?.[1] ?? '', charge?.[2] ?? '', String(Math.max(0, Math.ceil(settlement?.actualTokens ?? 0))), String(WINDOW_MS), String(PENDING_MAX_AGE_MS),
  );
  return result === 1;
}

/** Whether an event of a usage stream is remembered as metered (false once its record is pruned). */
export async function isMetered(redis: Redis, stream: string, eventId: string): Promise<boolean> {
  return (await redis.zscore(dedupKey(stream), eventId)) !== null;
}

/** Forgets the events of a usage stream up to and including `sequence`; resolves how many. */
export async function pruneMetered(redis: Redis, stream: string, sequence: number): Promise<number> {
  if (sequence <= 0) return 0;
  return redis.zremrangebyscore(dedupKey(stream), '-inf', String(sequence));
}

/** The totals of an API key; all zero for a key that has no metered usage. */
export async function keyTotals(redis: Redis, keyId: string): Promise<UsageTotals> {
  return totals(await redis.hgetall(KEY_TOTALS_PREFIX + keyId));
}

/** The totals of a model; all zero for a model that has no metered usage. */
export async function modelTotals(redis: Redis, modelId: string): Promise<UsageTotals> {
  return totals(await redis.hgetall(MODEL_TOTALS_PREFIX + modelId));
}

function totals(hash: Record<string, string>): UsageTotals {
  const cost = BigInt(hash.cost_pico_usd ?? '0');
  return {
    requests: Number(hash.requests ?? 0),
    prompt_tokens: Number(hash.prompt_tokens ?? 0),
    completion_tokens: Number(hash.completion_tokens ?? 0),
    cached_tokens: Number(hash.cached_tokens ?? 0),
    cost_pico_usd: cost,
    cost_usd: picoUsdToUsd(cost),
  };
}
