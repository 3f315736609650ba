import { picoUsdToUsd } from '@gateway/catalog';
import { USAGE_MAX_AGE_MS } from '@gateway/messaging';
import {
  DEFAULT_QUOTA_PREFIX,
  PENDING_MAX_AGE_MS,
  RESERVATION_PATTERN,
  SPEND_TTL_MS,
  spendDayField,
  spendKeyName,
  spendMonthField,
  utcDay,
  utcMonth,
  WINDOW_LUA,
  WINDOW_MS,
  windowKeyNames,
} from '@gateway/quota';
import { bucketNames, DAILY_RETENTION_MS, RECENT_REQUESTS_PER_KEY, RECENT_TTL_MS } from './usage-buckets.js';
import type { RedisClient, ReplicaWaiter } from '@gateway/redis';

/**
 * Metered usage in Redis, laid out so that metering one event touches one Redis Cluster slot, its
 * key id's (`{key_id}`), where auth keeps the key's quota window too:
 *   `metering:key:{<key_id>}`                   hash of running totals per API key
 *   `metering:key:{<key_id>}:model:<model_id>`  hash of running totals per API key and model
 *   `metering:dedup:{<key_id>}:<stream>`        sorted set of the key's events metered from one usage
 *                                               stream: member the event id, score its stream
 *                                               sequence; the de-duplication record, kept only while
 *                                               the event can still come back (see pruneMetered)
 *   `metering:keys`                             set of the key ids with usage: what sums a model's
 *                                               totals and what the pruning sweeps
 * A model's totals are the sum of its per-key totals, read when asked for (a report, not a request
 * path): no event writes a hash that every request of a model shares, which would make one shard
 * the ceiling of a popular model, and no script spans slots. Totals are Redis integers (64-bit
 * signed): cost_pico_usd overflows beyond 9.2 million USD per key and model.
 *
 * Why sets pruned below the consumer's acknowledgement floor rather than a record per event with
 * a time to live: an event comes back in two ways only. JetStream redelivers a message that was
 * metered but not acknowledged (a metering replica died between the two), with the same stream
 * sequence, for as long as it is unacknowledged: however long metering is down, so no short time
 * to live is safe. And a publisher that lost an acknowledgement publishes the event again: the
 * stream drops it within its duplicate window, and these records catch a later copy for as long
 * as they are retained past the floor. Once every message up to a sequence is acknowledged (the
 * durable consumer's ack floor), none of them is delivered again, so their records can go: memory
 * is bounded by the events in flight plus the retention, never by time. Each set is pruned as its
 * key meters (in the same script) and by a sweep for keys gone quiet; it also expires once the
 * stream can no longer hold any of its messages (the stream's maximum age), a bound for a set the
 * sweep never reaches.
 *
 * Time buckets, the key's spend per UTC day and month (what auth checks budgets against) and its
 * latest requests are written by the same script, in the same slot: see usage-buckets.ts and
 * @gateway/quota's spend.ts.
 *
 * The layout before this one (`metering:key:<key_id>`, `metering:model:<model_id>`,
 * `metering:dedup:<stream>`, no hash tags) is still read: its totals are added to the current
 * ones, and an event its de-duplication set remembers is not metered again.
 */
export const KEY_TOTALS_PREFIX = 'metering:key:';
/** The set of key ids with metered usage. */
export const METERED_KEYS = 'metering:keys';
/** Prefix of the per-model totals of the earlier layout (read, never written). */
export const LEGACY_MODEL_TOTALS_PREFIX = 'metering:model:';
/** Prefix of the de-duplication sets. */
export const DEDUP_PREFIX = 'metering:dedup:';
/** How long a de-duplication set outlives its key's last event: past the stream's maximum age no message of it can come back. */
export const DEDUP_TTL_MS = USAGE_MAX_AGE_MS + 24 * 60 * 60 * 1000;

/** The totals hash of a key. */
export function keyTotalsKey(keyId: string): string {
  return `${KEY_TOTALS_PREFIX}{${keyId}}`;
}

/** The totals hash of a key's usage of one model. */
export function keyModelTotalsKey(keyId: string, modelId: string): string {
  return `${KEY_TOTALS_PREFIX}{${keyId}}:model:${modelId}`;
}

/** The de-duplication set of a key's events from a usage stream. */
export function dedupKey(stream: string, keyId: string): string {
  return `${DEDUP_PREFIX}{${keyId}}:${stream}`;
}

/** The de-duplication set of a usage stream in the earlier layout (read and pruned, never written). */
export function legacyDedupKey(stream: string): string {
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
  /** When the edge received the request (Unix ms): the time buckets and the spend day it counts in; default now. */
  received_at_ms?: number;
  /** The request ended in an error after reaching a model (OUTCOME_FAILED). */
  failed?: boolean;
  /** A fallback model answered after the first choice failed. */
  fell_back?: boolean;
  /** The request as the latest-requests list shows it (JSON); omitted: not listed. */
  recent?: string;
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

// Adds an event to the totals, its time buckets and the key's spend only if it is new, remembers
// it, lists it among the key's latest requests, and settles the request's quota reservation with
// the tokens it used: all or nothing, so a redelivered event (or a crash between writes) can
// neither count nor settle twice, nor half. Every key is in the key id's slot.
// KEYS: the de-duplication set, key totals, key-and-model totals, the key's quota window R, T, H,
// P, then its spend hash, hourly bucket hash, daily bucket hash, latest-requests list and models
// set. ARGV: event id, stream sequence, prompt, completion, cached, cost_pico_usd, then the
// settlement: charge id ('' = none), actual tokens, window ms, pending max age ms; then the
// sequence up to which records may be pruned (0 = none) and the set's time to live in ms; then
// model id, hour field prefix, hourly expiry (Unix ms), day field prefix, daily expiry, errors
// (0|1), fallbacks (0|1), spend day field, spend month field, spend day, spend month, spend time
// to live, latest-request JSON ('' = none), latest requests kept, their time to live, the models
// set's time to live.
// Returns 1 when metered, 0 when the event was already metered.
const RECORD_SCRIPT = `${WINDOW_LUA}
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
if ARGV[11] ~= '0' then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[11]) end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[12])
for i = 2, 3 do
  redis.call('HINCRBY', KEYS[i], 'requests', 1)
  redis.call('HINCRBY', KEYS[i], 'prompt_tokens', ARGV[3])
  redis.call('HINCRBY', KEYS[i], 'completion_tokens', ARGV[4])
  redis.call('HINCRBY', KEYS[i], 'cached_tokens', ARGV[5])
  redis.call('HINCRBY', KEYS[i], 'cost_pico_usd', ARGV[6])
end
if ARGV[7] ~= '' then
  settleCharge(KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[7], tonumber(ARGV[8]), clock(''), tonumber(ARGV[9]), tonumber(ARGV[10]))
end
-- Time buckets: a field per count, only for counts that are not zero (most events have no cached
-- tokens, error or fallback). A bucket whose retention has passed expires at once.
local counts = {{'p', ARGV[3]}, {'c', ARGV[4]}, {'k', ARGV[5]}, {'$', ARGV[6]}, {'e', ARGV[18]}, {'f', ARGV[19]}}
for _, bucket in ipairs({{KEYS[9], ARGV[14], ARGV[15]}, {KEYS[10], ARGV[16], ARGV[17]}}) do
  redis.call('HINCRBY', bucket[1], bucket[2] .. 'r', 1)
  for _, count in ipairs(counts) do
    if count[2] ~= '0' then redis.call('HINCRBY', bucket[1], bucket[2] .. count[1], count[2]) end
  end
  redis.call('PEXPIREAT', bucket[1], bucket[3])
end
redis.call('SADD', KEYS[12], ARGV[13])
redis.call('PEXPIRE', KEYS[12], ARGV[28])
-- The key's spend per day and month; a day's first spend forgets days before the one before it.
if ARGV[6] ~= '0' then
  if redis.call('HEXISTS', KEYS[8], ARGV[20]) == 0 then
    for _, field in ipairs(redis.call('HKEYS', KEYS[8])) do
      local kind, number = string.sub(field, 1, 1), tonumber(string.sub(field, 3)) or 0
      if (kind == 'd' and number < tonumber(ARGV[22]) - 1) or (kind == 'm' and number < tonumber(ARGV[23]) - 1) then redis.call('HDEL', KEYS[8], field) end
    end
  end
  redis.call('HINCRBY', KEYS[8], ARGV[20], ARGV[6])
  redis.call('HINCRBY', KEYS[8], ARGV[21], ARGV[6])
  redis.call('PEXPIRE', KEYS[8], ARGV[24])
end
if ARGV[25] ~= '' then
  redis.call('LPUSH', KEYS[11], ARGV[25])
  redis.call('LTRIM', KEYS[11], 0, tonumber(ARGV[26]) - 1)
  redis.call('PEXPIRE', KEYS[11], ARGV[27])
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
  gatewayRecordUsage(...keysAndArgs: string[]): Promise<number>;
}

/** Options of recordEvent beyond the event. */
export interface RecordOptions {
  /** Records of this stream up to this sequence may be pruned on the way (0: none). */
  pruneThrough?: number;
  /** Waits for Redis replicas to have the write before it counts (REDIS_WAIT_REPLICAS); none: no wait. */
  replicas?: ReplicaWaiter;
  /** Called when fewer replicas than asked for had the write in time (or its master is known to lack them). */
  onUnreplicated?: () => void;
}

/**
 * Meters one event of a usage stream atomically, settling its reservation when it names one;
 * resolves true when it was new and counted, false when it had already been metered (nothing
 * changed). Rejects when Redis fails: then nothing changed either. `sequence` is the event's
 * stream sequence, by which its record is pruned. A malformed reservation id, or one of another
 * key than the event's, is not settled (its window lives in another slot).
 */
export async function recordEvent(
  redis: RedisClient,
  stream: string,
  eventId: string,
  sequence: number,
  usage: EventUsage,
  settlement?: EventSettlement,
  options: RecordOptions = {},
): Promise<boolean> {
  if (!('gatewayRecordUsage' in redis)) redis.defineCommand('gatewayRecordUsage', { numberOfKeys: 12, lua: RECORD_SCRIPT });
  const match = settlement ? RESERVATION_PATTERN.exec(settlement.reservationId) : null;
  const charge = match && match[1] === usage.key_id ? match : null;
  const dedup = dedupKey(stream, usage.key_id);
  const at = usage.received_at_ms && usage.received_at_ms > 0 ? usage.received_at_ms : Date.now();
  const buckets = bucketNames(usage.key_id, usage.model_id, at);
  const result = await (redis as RedisClient & MeteringCommands).gatewayRecordUsage(
    dedup,
    keyTotalsKey(usage.key_id),
    keyModelTotalsKey(usage.key_id, usage.model_id),
    ...windowKeyNames(settlement?.prefix ?? DEFAULT_QUOTA_PREFIX, usage.key_id),
    spendKeyName(usage.key_id),
    buckets.hourly,
    buckets.daily,
    buckets.recent,
    buckets.models,
    eventId,
    String(sequence),
    String(usage.prompt_tokens),
    String(usage.completion_tokens),
    String(usage.cached_tokens),
    usage.cost_pico_usd.toString(),
    charge?.[2] ?? '',
    String(Math.max(0, Math.ceil(settlement?.actualTokens ?? 0))),
    String(WINDOW_MS),
    String(PENDING_MAX_AGE_MS),
    String(Math.max(0, options.pruneThrough ?? 0)),
    String(DEDUP_TTL_MS),
    usage.model_id,
    buckets.hourField,
    String(buckets.hourlyExpiresAtMs),
    buckets.dayField,
    String(buckets.dailyExpiresAtMs),
    usage.failed ? '1' : '0',
    usage.fell_back ? '1' : '0',
    spendDayField(at),
    spendMonthField(at),
    String(utcDay(at)),
    String(utcMonth(at)),
    String(SPEND_TTL_MS),
    usage.recent ?? '',
    String(RECENT_REQUESTS_PER_KEY),
    String(RECENT_TTL_MS),
    String(DAILY_RETENTION_MS),
  );
  if (result === 1 && options.replicas) {
    // A WAIT that fails (the master is gone) rejects: the message comes back, and is metered on the
    // promoted replica unless the write reached it. One that times out (a replica is down, or a
    // promoted master has none yet) counts and goes on, so that metering never stops with a replica.
    if (!(await options.replicas.wait(dedup))) options.onUnreplicated?.();
  }
  return result === 1;
}

/** Whether an event of a key from a usage stream is remembered as metered (false once its record is pruned). */
export async function isMetered(redis: RedisClient, stream: string, keyId: string, eventId: string): Promise<boolean> {
  return (await redis.zscore(dedupKey(stream, keyId), eventId)) !== null;
}

/** Whether the earlier layout's de-duplication set of a stream remembers an event. */
export async function isMeteredEarlier(redis: RedisClient, stream: string, eventId: string): Promise<boolean> {
  return (await redis.zscore(legacyDedupKey(stream), eventId)) !== null;
}

/** Every key id with metered usage (SSCAN: a large set is read in pieces). */
export async function meteredKeys(redis: RedisClient): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '0';
  do {
    const [next, page] = await redis.sscan(METERED_KEYS, cursor, 'COUNT', 1_000);
    cursor = next;
    ids.push(...page);
  } while (cursor !== '0');
  return ids;
}

/**
 * Forgets the events of a usage stream up to and including `sequence`, for every key with usage
 * and in the earlier layout's set; resolves the records left (events in flight plus retention).
 */
export async function pruneMetered(redis: RedisClient, stream: string, sequence: number): Promise<number> {
  const names = [...(await meteredKeys(redis)).map((keyId) => dedupKey(stream, keyId)), legacyDedupKey(stream)];
  const left = await Promise.all(
    names.map(async (name) => {
      if (sequence > 0) await redis.zremrangebyscore(name, '-inf', String(sequence));
      return redis.zcard(name);
    }),
  );
  return left.reduce((sum, count) => sum + count, 0);
}

/** The totals of an API key; all zero for a key that has no metered usage. */
export async function keyTotals(redis: RedisClient, keyId: string): Promise<UsageTotals> {
  const [current, earlier] = await Promise.all([redis.hgetall(keyTotalsKey(keyId)), redis.hgetall(KEY_TOTALS_PREFIX + keyId)]);
  return totals([current, earlier]);
}

/** The totals of a key's usage of one model; all zero when there is none. */
export async function keyModelTotals(redis: RedisClient, keyId: string, modelId: string): Promise<UsageTotals> {
  return totals([await redis.hgetall(keyModelTotalsKey(keyId, modelId))]);
}

/** The totals of a model, summed over the keys that used it; all zero for a model without usage. */
export async function modelTotals(redis: RedisClient, modelId: string): Promise<UsageTotals> {
  const keys = await meteredKeys(redis);
  const hashes = await Promise.all([
    ...keys.map((keyId) => redis.hgetall(keyModelTotalsKey(keyId, modelId))),
    redis.hgetall(LEGACY_MODEL_TOTALS_PREFIX + modelId),
  ]);
  return totals(hashes);
}

const TOTAL_FIELDS = ['requests', 'prompt_tokens', 'completion_tokens', 'cached_tokens', 'cost_pico_usd'] as const;

function totals(hashes: Array<Record<string, string>>): UsageTotals {
  const sum = { requests: 0n, prompt_tokens: 0n, completion_tokens: 0n, cached_tokens: 0n, cost_pico_usd: 0n };
  for (const hash of hashes) for (const field of TOTAL_FIELDS) sum[field] += BigInt(hash[field] ?? '0');
  return {
    requests: Number(sum.requests),
    prompt_tokens: Number(sum.prompt_tokens),
    completion_tokens: Number(sum.completion_tokens),
    cached_tokens: Number(sum.cached_tokens),
    cost_pico_usd: sum.cost_pico_usd,
    cost_usd: picoUsdToUsd(sum.cost_pico_usd),
  };
}
