/**
 * Metered usage on a time axis, per API key and model, written by the record script in the same
 * atomic step as the totals (so exactly once), and read back by the UsageService (the names are
 * @gateway/keyspace's; docs/keyspace.md maps them):
 *   `metering:usage:{<key_id>}:<model>:h:<day>`    hourly buckets of one UTC day: fields
 *                                                  `<hour>:<count>`; kept until HOURLY_RETENTION_MS
 *                                                  after the day ends
 *   `metering:usage:{<key_id>}:<model>:d:<month>`  daily buckets of one UTC month: fields
 *                                                  `<day of month>:<count>`; kept until
 *                                                  DAILY_RETENTION_MS after the month ends
 *   `metering:usage:{<key_id>}:models`             set of the models the key used (what a read
 *                                                  walks)
 *   `metering:recent:{<key_id>}`                   list of the key's latest requests (JSON),
 *                                                  newest first, RECENT_REQUESTS_PER_KEY at most
 *   `metering:recent-keys`                         sorted set key id -> last listed (Unix ms), the
 *                                                  keys whose latest requests the console merges
 * where <day> counts UTC days since 1970-01-01 and <month> is year * 12 + (month - 1), as in
 * @gateway/keyspace's spend hash. Counts are one letter each: r requests, p prompt tokens, c
 * completion tokens, k cached tokens, w cache-written tokens, $ cost in pico-USD, e errors, f
 * fallbacks, h response-cache hits, s the cost those hits saved in pico-USD; a count that is zero
 * has no field. Memory is bounded by time, never by traffic: a key costs at most
 * (models used) x (15 hourly hashes + 14 daily hashes) plus its list.
 */
import {
  DAY_MS,
  dailyKey,
  HOUR_MS,
  hourlyKey,
  METERED_KEY_TEAMS,
  modelsKey,
  RECENT_KEYS,
  recentKey,
  utcDay,
  utcMonth,
  utcMonthStartMs,
} from '@gateway/keyspace';
import type { RedisClient } from '@gateway/redis';

/** How long hourly buckets are kept after their day ends. */
export const HOURLY_RETENTION_MS = 14 * DAY_MS;
/** How long daily buckets are kept after their month ends. */
export const DAILY_RETENTION_MS = 400 * DAY_MS;
/** How many of a key's latest requests are kept. */
export const RECENT_REQUESTS_PER_KEY = 20;
/** How long a key's latest requests outlive its last one. */
export const RECENT_TTL_MS = 2 * DAY_MS;
/** How many keys RECENT_KEYS keeps (the most recently active). */
export const RECENT_KEYS_KEPT = 1_000;

/** The counts both the totals and the buckets keep. */
export interface MeteredCounts {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** Prompt tokens read from the provider's cache (a part of prompt_tokens). */
  cached_tokens: number;
  /** Prompt tokens written to the provider's cache (a part of prompt_tokens). */
  cache_write_tokens: number;
  cost_pico_usd: bigint;
  /**
   * Requests answered from the response cache: each counts in requests and at its hit cost, never
   * in the token counts (no provider processed its tokens).
   */
  cache_hits: number;
  /** What the cached answers of those hits cost when they were made, pico-USD: the cost they saved. */
  saved_cost_pico_usd: bigint;
}

/** What one bucket counted for one key and model. */
export interface BucketCounts extends MeteredCounts {
  errors: number;
  fallbacks: number;
}

/** One non-empty bucket of a key and model. */
export interface UsageBucket {
  /** Unix ms when the bucket starts. */
  startMs: number;
  keyId: string;
  /** The key's team; '' for none. */
  teamId: string;
  modelId: string;
  counts: BucketCounts;
}

/** A bucket width. */
export type BucketWidth = 'hour' | 'day';

const COUNT_FIELDS: Record<string, keyof BucketCounts> = {
  r: 'requests',
  p: 'prompt_tokens',
  c: 'completion_tokens',
  k: 'cached_tokens',
  w: 'cache_write_tokens',
  $: 'cost_pico_usd',
  e: 'errors',
  f: 'fallbacks',
  h: 'cache_hits',
  s: 'saved_cost_pico_usd',
};

function emptyCounts(): BucketCounts {
  return {
    requests: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    cached_tokens: 0,
    cache_write_tokens: 0,
    cost_pico_usd: 0n,
    errors: 0,
    fallbacks: 0,
    cache_hits: 0,
    saved_cost_pico_usd: 0n,
  };
}

/** How buckets of one width are laid out: a hash per `unit` (UTC day or month) of `widthMs` buckets. */
interface BucketAxis {
  widthMs: number;
  /** How far back a hash may still be retained: its retention plus its unit's length. */
  keptMs: number;
  unitOf(ms: number): number;
  hashOf(keyId: string, modelId: string, unit: number, teamId?: string): string;
  /** Unix ms when a unit's first bucket starts. */
  firstMsOf(unit: number): number;
  /** The index of a unit's first bucket (hours count from 0, days of the month from 1). */
  offset: number;
}

const AXES: Record<BucketWidth, BucketAxis> = {
  hour: { widthMs: HOUR_MS, keptMs: HOURLY_RETENTION_MS + DAY_MS, unitOf: utcDay, hashOf: hourlyKey, firstMsOf: (day) => day * DAY_MS, offset: 0 },
  day: { widthMs: DAY_MS, keptMs: DAILY_RETENTION_MS + 31 * DAY_MS, unitOf: utcMonth, hashOf: dailyKey, firstMsOf: utcMonthStartMs, offset: 1 },
};

/** The buckets of one hash: `<n>:<count>` fields, bucket n starting at firstMs + (n - offset) * widthMs. */
function bucketsOf(hash: Record<string, string>, owner: { keyId: string; teamId: string; modelId: string }, firstMs: number, axis: BucketAxis): UsageBucket[] {
  const byIndex = new Map<number, BucketCounts>();
  for (const [field, value] of Object.entries(hash)) {
    const colon = field.indexOf(':');
    const count = COUNT_FIELDS[field.slice(colon + 1)];
    const index = Number(field.slice(0, colon));
    if (!count || !Number.isInteger(index)) continue;
    let counts = byIndex.get(index);
    if (!counts) byIndex.set(index, (counts = emptyCounts()));
    if (count === 'cost_pico_usd' || count === 'saved_cost_pico_usd') counts[count] = BigInt(value);
    else counts[count] = Number(value);
  }
  return [...byIndex].map(([index, counts]) => ({ startMs: firstMs + (index - axis.offset) * axis.widthMs, ...owner, counts }));
}

/** What readBuckets reads. */
export interface BucketQuery {
  /** The keys whose buckets are read. */
  keyIds: readonly string[];
  width: BucketWidth;
  /** The range, [startMs, endMs), Unix ms. */
  startMs: number;
  endMs: number;
  /** The clock (default now): what is still retained is counted from it. */
  nowMs?: number;
  /** Given, a key whose shard does not answer is left out and named here instead of failing the read. */
  unavailable?: string[];
  /** The teams of the keys in one (key id -> team id); a key not in it has none. */
  teams?: ReadonlyMap<string, string>;
}

/** The non-empty buckets of one key that overlap the query's range, from the hashes of `units`. */
async function readKeyBuckets(redis: RedisClient, keyId: string, query: BucketQuery, units: readonly number[]): Promise<UsageBucket[]> {
  const axis = AXES[query.width];
  const teamId = query.teams?.get(keyId) ?? '';
  const models = await redis.smembers(modelsKey(keyId, teamId));
  const read = await Promise.all(
    models.flatMap((modelId) =>
      units.map(async (unit) =>
        bucketsOf(await redis.hgetall(axis.hashOf(keyId, modelId, unit, teamId)), { keyId, teamId, modelId }, axis.firstMsOf(unit), axis),
      ),
    ),
  );
  return read.flat().filter((bucket) => bucket.startMs + axis.widthMs > query.startMs && bucket.startMs < query.endMs);
}

/**
 * The non-empty buckets of the given keys that overlap [startMs, endMs), by start, then key, then
 * model. Only what is still retained is read: the range is clamped to the retention, so a range
 * older than that is simply empty.
 */
export async function readBuckets(redis: RedisClient, query: BucketQuery): Promise<UsageBucket[]> {
  const { keyIds, startMs, endMs, nowMs = Date.now(), unavailable } = query;
  if (endMs <= startMs || keyIds.length === 0) return [];
  const axis = AXES[query.width];
  const from = Math.max(startMs, nowMs - axis.keptMs);
  const to = Math.min(endMs, nowMs + DAY_MS);
  if (to <= from) return [];
  // The hashes that can hold the range: one per UTC day (hourly) or month (daily).
  const units: number[] = [];
  for (let unit = axis.unitOf(from); unit <= axis.unitOf(to - 1); unit += 1) units.push(unit);
  const found: UsageBucket[] = [];
  await Promise.all(
    keyIds.map(async (keyId) => {
      try {
        found.push(...(await readKeyBuckets(redis, keyId, query, units)));
      } catch (error) {
        // A key whose shard does not answer: left out and named, when the caller takes a partial answer.
        if (!unavailable) throw error;
        unavailable.push(keyId);
      }
    }),
  );
  return found.sort((a, b) => a.startMs - b.startMs || a.keyId.localeCompare(b.keyId) || a.modelId.localeCompare(b.modelId));
}

/**
 * The latest requests, newest first: one key's list, or (no key) the lists of the most recently
 * active keys merged. Each entry is the JSON the meter listed.
 */
export async function readRecent(redis: RedisClient, limit: number, keyId?: string): Promise<string[]> {
  const keys = keyId ? [keyId] : await redis.zrevrange(RECENT_KEYS, 0, Math.min(limit, 100) - 1);
  const teams = keys.length > 0 ? await redis.hmget(METERED_KEY_TEAMS, ...keys) : [];
  const lists = await Promise.all(keys.map((key, index) => redis.lrange(recentKey(key, teams[index] ?? undefined), 0, limit - 1)));
  if (keyId) return lists[0] ?? [];
  const entries = lists.flat().map((json) => ({ json, at: Number((JSON.parse(json) as { received_at_ms?: number }).received_at_ms ?? 0) }));
  return entries
    .sort((a, b) => b.at - a.at)
    .slice(0, limit)
    .map((entry) => entry.json);
}

/** Notes that a key has new requests listed, keeping the RECENT_KEYS_KEPT most recent keys. */
export async function noteRecentKey(redis: RedisClient, keyId: string, atMs: number): Promise<void> {
  await redis.zadd(RECENT_KEYS, atMs, keyId);
  await redis.zremrangebyrank(RECENT_KEYS, 0, -RECENT_KEYS_KEPT - 1);
}
