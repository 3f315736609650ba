/**
 * Metered usage on a time axis, per API key and model, written by the record script in the same
 * atomic step as the totals (so exactly once), and read back by the UsageService:
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
 * @gateway/quota's spend hash. Counts are one letter each: r requests, p prompt tokens, c
 * completion tokens, k cached tokens, $ cost in pico-USD, e errors, f fallbacks; a count that is
 * zero has no field. Memory is bounded by time, never by traffic: a key costs at most
 * (models used) x (15 hourly hashes + 14 daily hashes) plus its list.
 */
import { DAY_MS, utcDay, utcMonth, utcMonthStartMs } from '@gateway/quota';
import type { RedisClient } from '@gateway/redis';

/** How long hourly buckets are kept after their day ends. */
export const HOURLY_RETENTION_MS = 14 * DAY_MS;
/** How long daily buckets are kept after their month ends. */
export const DAILY_RETENTION_MS = 400 * DAY_MS;
/** How many of a key's latest requests are kept. */
export const RECENT_REQUESTS_PER_KEY = 20;
/** How long a key's latest requests outlive its last one. */
export const RECENT_TTL_MS = 2 * DAY_MS;
/** The sorted set of keys with recent requests. */
export const RECENT_KEYS = 'metering:recent-keys';
/** How many keys RECENT_KEYS keeps (the most recently active). */
export const RECENT_KEYS_KEPT = 1_000;

const HOUR_MS = 3_600_000;

/** Where one event's buckets live, and its fields' prefixes. */
export interface BucketNames {
  hourly: string;
  daily: string;
  models: string;
  recent: string;
  /** `<hour>:` */
  hourField: string;
  /** `<day of month>:` */
  dayField: string;
  hourlyExpiresAtMs: number;
  dailyExpiresAtMs: number;
}

/** The hourly bucket hash of a key and model for a UTC day. */
export function hourlyKey(keyId: string, modelId: string, day: number): string {
  return `metering:usage:{${keyId}}:${modelId}:h:${day}`;
}

/** The daily bucket hash of a key and model for a UTC month. */
export function dailyKey(keyId: string, modelId: string, month: number): string {
  return `metering:usage:{${keyId}}:${modelId}:d:${month}`;
}

/** The set of models a key used. */
export function modelsKey(keyId: string): string {
  return `metering:usage:{${keyId}}:models`;
}

/** The list of a key's latest requests. */
export function recentKey(keyId: string): string {
  return `metering:recent:{${keyId}}`;
}

/** The buckets an event received at `atMs` counts in. */
export function bucketNames(keyId: string, modelId: string, atMs: number): BucketNames {
  const day = utcDay(atMs);
  const month = utcMonth(atMs);
  return {
    hourly: hourlyKey(keyId, modelId, day),
    daily: dailyKey(keyId, modelId, month),
    models: modelsKey(keyId),
    recent: recentKey(keyId),
    hourField: `${Math.floor((atMs - day * DAY_MS) / HOUR_MS)}:`,
    dayField: `${new Date(atMs).getUTCDate()}:`,
    hourlyExpiresAtMs: (day + 1) * DAY_MS + HOURLY_RETENTION_MS,
    dailyExpiresAtMs: utcMonthStartMs(month + 1) + DAILY_RETENTION_MS,
  };
}

/** What one bucket counted for one key and model. */
export interface BucketCounts {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cost_pico_usd: bigint;
  errors: number;
  fallbacks: number;
}

/** One non-empty bucket of a key and model. */
export interface UsageBucket {
  /** Unix ms when the bucket starts. */
  startMs: number;
  keyId: string;
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
  $: 'cost_pico_usd',
  e: 'errors',
  f: 'fallbacks',
};

function emptyCounts(): BucketCounts {
  return { requests: 0, prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cost_pico_usd: 0n, errors: 0, fallbacks: 0 };
}

/** The buckets of one hash: `<n>:<count>` fields, bucket n starting at firstMs + (n - offset) * widthMs. */
function bucketsOf(hash: Record<string, string>, keyId: string, modelId: string, firstMs: number, offset: number, widthMs: number): UsageBucket[] {
  const byIndex = new Map<number, BucketCounts>();
  for (const [field, value] of Object.entries(hash)) {
    const colon = field.indexOf(':');
    const count = COUNT_FIELDS[field.slice(colon + 1)];
    const index = Number(field.slice(0, colon));
    if (!count || !Number.isInteger(index)) continue;
    let counts = byIndex.get(index);
    if (!counts) byIndex.set(index, (counts = emptyCounts()));
    if (count === 'cost_pico_usd') counts.cost_pico_usd = BigInt(value);
    else counts[count] = Number(value);
  }
  return [...byIndex].map(([index, counts]) => ({ startMs: firstMs + (index - offset) * widthMs, keyId, modelId, counts }));
}

/**
 * The non-empty buckets of the given keys (every key with usage when `keyIds` is undefined) that
 * overlap [startMs, endMs), by start, then key, then model. Only what is still retained is read:
 * the range is clamped to the retention, so a range older than that is simply empty.
 */
export async function readBuckets(
  redis: RedisClient,
  keyIds: readonly string[],
  width: BucketWidth,
  startMs: number,
  endMs: number,
  nowMs = Date.now(),
  unavailable?: string[],
): Promise<UsageBucket[]> {
  if (endMs <= startMs || keyIds.length === 0) return [];
  const hourly = width === 'hour';
  const oldest = nowMs - (hourly ? HOURLY_RETENTION_MS : DAILY_RETENTION_MS) - (hourly ? DAY_MS : 31 * DAY_MS);
  const from = Math.max(startMs, oldest);
  const to = Math.min(endMs, nowMs + DAY_MS);
  if (to <= from) return [];
  // The hashes that can hold the range: one per UTC day (hourly) or month (daily).
  const units: number[] = [];
  for (let unit = hourly ? utcDay(from) : utcMonth(from); unit <= (hourly ? utcDay(to - 1) : utcMonth(to - 1)); unit += 1) units.push(unit);
  const found: UsageBucket[] = [];
  await Promise.all(
    keyIds.map(async (keyId) => {
      const ofKey: UsageBucket[] = [];
      try {
        const models = await redis.smembers(modelsKey(keyId));
        await Promise.all(
          models.flatMap((modelId) =>
            units.map(async (unit) => {
              const hash = await redis.hgetall(hourly ? hourlyKey(keyId, modelId, unit) : dailyKey(keyId, modelId, unit));
              const buckets = hourly
                ? bucketsOf(hash, keyId, modelId, unit * DAY_MS, 0, HOUR_MS)
                : bucketsOf(hash, keyId, modelId, utcMonthStartMs(unit), 1, DAY_MS);
              for (const bucket of buckets) if (bucket.startMs + (hourly ? HOUR_MS : DAY_MS) > startMs && bucket.startMs < endMs) ofKey.push(bucket);
            }),
          ),
        );
      } catch (error) {
        // A key whose shard does not answer: left out and named, when the caller takes a partial answer.
        if (!unavailable) throw error;
        unavailable.push(keyId);
        return;
      }
      found.push(...ofKey);
    }),
  );
  return found.sort((a, b) => a.startMs - b.startMs || a.keyId.localeCompare(b.keyId) || a.modelId.localeCompare(b.modelId));
}

/**
 * The latest requests, newest first: one key's list, or (no key) the lists of the most recently
 * active keys merged. Each entry is the JSON the meter listed.
 */
export async function readRecent(redis: RedisClient, limit: number, keyId?: string): Promise<string[]> {
  if (keyId) return redis.lrange(recentKey(keyId), 0, limit - 1);
  const keys = await redis.zrevrange(RECENT_KEYS, 0, Math.min(limit, 100) - 1);
  const lists = await Promise.all(keys.map((key) => redis.lrange(recentKey(key), 0, limit - 1)));
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
