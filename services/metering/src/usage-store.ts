import { picoUsdToUsd } from '@gateway/catalog';
import {
  dedupKey,
  keyModelTotalsKey,
  keyTotalsKey,
  METERED_KEY_TEAMS,
  METERED_KEYS,
  parseReservationId,
  recordUsage,
  SPEND_TTL_MS,
  teamTotalsKey,
  v1ToV2,
} from '@gateway/keyspace';
import { USAGE_MAX_AGE_MS } from '@gateway/messaging';
import type { RedisClient, ReplicaWaiter } from '@gateway/redis';
import { DAILY_RETENTION_MS, HOURLY_RETENTION_MS, type MeteredCounts, RECENT_REQUESTS_PER_KEY, RECENT_TTL_MS } from './usage-buckets.js';

/**
 * Metered usage in Redis, laid out so that metering one event touches one Redis Cluster slot, its
 * key id's (`{key_id}`), where auth keeps the key's quota window too. The names, and the script
 * that meters an event (record-usage.lua), are @gateway/keyspace's; docs/keyspace.md maps them:
 *   `metering:key:{<key_id>}`                   hash of running totals per API key
 *   `metering:key:{<key_id>}:model:<model_id>`  hash of running totals per API key and model
 *   `metering:dedup:{<key_id>}:<stream>`        sorted set of the key's events metered from one usage
 *                                               stream: member the event id, score its stream
 *                                               sequence; the de-duplication record, kept only while
 *                                               the event can still come back (see pruneMetered)
 *   `metering:keys`                             set of the key ids with usage: what sums a model's
 *                                               totals and what the pruning sweeps
 *   `metering:key-teams`                        hash key id -> team id of each metered key in a team
 *   `metering:team:{<team_id>}`                 hash of running totals per team
 * A key in a team (the event's team_id) has every name above, and its spend, tagged
 * `{<team_id>}:<key_id>` instead of `{<key_id>}`: the team's slot, where auth keeps the team's
 * window and metering the team's spend and totals, all written by the same script.
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
 * @gateway/keyspace's spend.ts.
 *
 * The layout before this one (v1: no hash tags) is still read: its totals are added to the current
 * ones, and an event its de-duplication set remembers is not metered again (@gateway/keyspace's
 * migrations/v1-to-v2.ts names its keys).
 */

/** The de-duplication set of a usage stream in the earlier layout (read and pruned, never written). */
export const legacyDedupKey: (stream: string) => string = v1ToV2.v1DedupKey;

/**
 * How long a de-duplication set outlives its key's last event: past the stream's maximum age (and
 * a day) no message of it can come back. For a stream kept `maxAgeMs` (USAGE_STREAM_MAX_AGE_HOURS).
 */
export function dedupTtlMs(maxAgeMs: number = USAGE_MAX_AGE_MS): number {
  return maxAgeMs + 24 * 60 * 60 * 1000;
}

/** What one event adds to the totals of its key and its model. */
export interface EventUsage {
  key_id: string;
  /** The key's team; absent or '': none. */
  team_id?: string;
  model_id: string;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  /** Prompt tokens written to the provider's cache (a part of prompt_tokens); default 0. */
  cache_write_tokens?: number;
  cost_pico_usd: bigint;
  /** When the edge received the request (Unix ms): the time buckets and the spend day it counts in; default now. */
  received_at_ms?: number;
  /** The request ended in an error after reaching a model (OUTCOME_FAILED). */
  failed?: boolean;
  /** A fallback model answered after the first choice failed. */
  fell_back?: boolean;
  /** Answered from the response cache (UsageEvent.cache.status `hit`): counted in cache_hits. */
  cache_hit?: boolean;
  /** What the cached answer cost when it was made, pico-USD (the cost a hit saved); default 0. */
  saved_cost_pico_usd?: bigint;
  /** The request as the latest-requests list shows it (JSON); omitted: not listed. */
  recent?: string;
}

/** Running totals of a key or a model. */
export interface UsageTotals extends MeteredCounts {
  /** cost_pico_usd in USD, for display. */
  cost_usd: number;
}

/** The quota reservation a usage event settles: see UsageEvent.reservation_id. */
export interface EventSettlement {
  /** `<key id>:<charge id>`, as CheckKey returned it. */
  reservationId: string;
  /** The tokens the request used: its usage's total. */
  actualTokens: number;
  /** auth's key prefix (DEFAULT_AUTH_PREFIX unless a test chooses another). */
  prefix: string;
}

/** Options of recordEvent beyond the event. */
export interface RecordOptions {
  /** Records of this stream up to this sequence may be pruned on the way (0: none). */
  pruneThrough?: number;
  /** Waits for Redis replicas to have the write before it counts (REDIS_WAIT_REPLICAS); none: no wait. */
  replicas?: ReplicaWaiter;
  /** Called when fewer replicas than asked for had the write in time (or its master is known to lack them). */
  onUnreplicated?: () => void;
  /** How long the stream keeps an event (USAGE_STREAM_MAX_AGE_HOURS, ms): the de-duplication sets outlive it. */
  maxAgeMs?: number;
}

/** One event of a usage stream, to meter. */
export interface StreamEvent {
  /** The usage stream it came from: its de-duplication records are kept per stream. */
  stream: string;
  eventId: string;
  /** Its stream sequence, by which its record is pruned. */
  sequence: number;
  usage: EventUsage;
  /** The reservation it settles, if any. */
  settlement?: EventSettlement;
}

/**
 * Meters one event of a usage stream atomically, settling its reservation when it names one;
 * resolves true when it was new and counted, false when it had already been metered (nothing
 * changed). Rejects when Redis fails: then nothing changed either. A malformed reservation id, or
 * one of another key than the event's, is not settled (its window lives in another slot).
 */
export async function recordEvent(redis: RedisClient, event: StreamEvent, options: RecordOptions = {}): Promise<boolean> {
  const { usage, settlement } = event;
  const reservation = settlement ? parseReservationId(settlement.reservationId) : undefined;
  const charge = reservation?.keyId === usage.key_id ? reservation : undefined;
  const { outcome, dedupKey: dedup } = await recordUsage(redis, {
    event: {
      stream: event.stream,
      eventId: event.eventId,
      sequence: event.sequence,
      keyId: usage.key_id,
      ...(usage.team_id && { teamId: usage.team_id }),
      modelId: usage.model_id,
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      cachedTokens: usage.cached_tokens,
      cacheWriteTokens: usage.cache_write_tokens ?? 0,
      costPicoUsd: usage.cost_pico_usd,
      atMs: usage.received_at_ms && usage.received_at_ms > 0 ? usage.received_at_ms : Date.now(),
      failed: usage.failed === true,
      fellBack: usage.fell_back === true,
      cacheHit: usage.cache_hit === true,
      savedCostPicoUsd: usage.saved_cost_pico_usd ?? 0n,
      recent: usage.recent ?? '',
    },
    ...(settlement && charge && { settlement: { chargeId: charge.chargeId, actualTokens: settlement.actualTokens, prefix: settlement.prefix } }),
    retention: {
      pruneThrough: options.pruneThrough ?? 0,
      dedupTtlMs: dedupTtlMs(options.maxAgeMs),
      buckets: { hourlyMs: HOURLY_RETENTION_MS, dailyMs: DAILY_RETENTION_MS },
      spendTtlMs: SPEND_TTL_MS,
      recentKept: RECENT_REQUESTS_PER_KEY,
      recentTtlMs: RECENT_TTL_MS,
    },
  });
  if (outcome === 'metered' && options.replicas) {
    // A WAIT that fails (the master is gone) rejects: the message comes back, and is metered on the
    // promoted replica unless the write reached it. One that times out (a replica is down, or a
    // promoted master has none yet) counts and goes on, so that metering never stops with a replica.
    if (!(await options.replicas.wait(dedup))) options.onUnreplicated?.();
  }
  return outcome === 'metered';
}

/** Whether an event of a key (of a team, when given) from a usage stream is remembered as metered (false once its record is pruned). */
export async function isMetered(redis: RedisClient, stream: string, keyId: string, eventId: string, teamId?: string): Promise<boolean> {
  return (await redis.zscore(dedupKey(stream, keyId, teamId), eventId)) !== null;
}

/** The teams of metered keys: key id -> team id, for the keys in a team (METERED_KEY_TEAMS). */
export async function meteredKeyTeams(redis: RedisClient, keyIds: readonly string[]): Promise<Map<string, string>> {
  const teams = new Map<string, string>();
  if (keyIds.length === 0) return teams;
  const found = await redis.hmget(METERED_KEY_TEAMS, ...keyIds);
  keyIds.forEach((keyId, index) => {
    if (found[index]) teams.set(keyId, found[index]!);
  });
  return teams;
}

/** The team a metered key is in, or undefined. */
async function teamOf(redis: RedisClient, keyId: string): Promise<string | undefined> {
  return (await redis.hget(METERED_KEY_TEAMS, keyId)) ?? undefined;
}

/** Whether the earlier layout's de-duplication set of a stream remembers an event. */
export async function isMeteredEarlier(redis: RedisClient, stream: string, eventId: string): Promise<boolean> {
  return (await redis.zscore(v1ToV2.v1DedupKey(stream), eventId)) !== null;
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
  const keys = await meteredKeys(redis);
  const teams = await meteredKeyTeams(redis, keys);
  const names = [...keys.map((keyId) => dedupKey(stream, keyId, teams.get(keyId))), v1ToV2.v1DedupKey(stream)];
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
  const teamId = await teamOf(redis, keyId);
  const [current, earlier] = await Promise.all([redis.hgetall(keyTotalsKey(keyId, teamId)), redis.hgetall(v1ToV2.v1KeyTotalsKey(keyId))]);
  return totals([current, earlier]);
}

/** The totals of a key's usage of one model; all zero when there is none. */
export async function keyModelTotals(redis: RedisClient, keyId: string, modelId: string): Promise<UsageTotals> {
  return totals([await redis.hgetall(keyModelTotalsKey(keyId, modelId, await teamOf(redis, keyId)))]);
}

/** The totals of a team over all its keys; all zero for a team without metered usage. */
export async function teamTotals(redis: RedisClient, teamId: string): Promise<UsageTotals> {
  return totals([await redis.hgetall(teamTotalsKey(teamId))]);
}

/** The totals of a model, summed over the keys that used it; all zero for a model without usage. */
export async function modelTotals(redis: RedisClient, modelId: string): Promise<UsageTotals> {
  const keys = await meteredKeys(redis);
  const teams = await meteredKeyTeams(redis, keys);
  const hashes = await Promise.all([
    ...keys.map((keyId) => redis.hgetall(keyModelTotalsKey(keyId, modelId, teams.get(keyId)))),
    redis.hgetall(v1ToV2.v1ModelTotalsKey(modelId)),
  ]);
  return totals(hashes);
}

const TOTAL_FIELDS = [
  'requests',
  'prompt_tokens',
  'completion_tokens',
  'cached_tokens',
  'cache_write_tokens',
  'cost_pico_usd',
  'cache_hits',
  'saved_cost_pico_usd',
] as const;

function totals(hashes: Array<Record<string, string>>): UsageTotals {
  const sum = Object.fromEntries(TOTAL_FIELDS.map((field) => [field, 0n])) as Record<(typeof TOTAL_FIELDS)[number], bigint>;
  for (const hash of hashes) for (const field of TOTAL_FIELDS) sum[field] += BigInt(hash[field] ?? '0');
  return {
    requests: Number(sum.requests),
    prompt_tokens: Number(sum.prompt_tokens),
    completion_tokens: Number(sum.completion_tokens),
    cached_tokens: Number(sum.cached_tokens),
    cache_write_tokens: Number(sum.cache_write_tokens),
    cost_pico_usd: sum.cost_pico_usd,
    cost_usd: picoUsdToUsd(sum.cost_pico_usd),
    cache_hits: Number(sum.cache_hits),
    saved_cost_pico_usd: sum.saved_cost_pico_usd,
  };
}
