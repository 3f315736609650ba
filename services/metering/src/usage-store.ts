import type { Redis } from 'ioredis';
import { picoUsdToUsd } from '@gateway/catalog';

/**
 * Metered usage in Redis:
 *   `metering:event:<event_id>`  hash, one per metered event, kept EVENT_TTL_SECONDS: the
 *                                de-duplication record (and an audit trail of what was billed)
 *   `metering:key:<key_id>`      hash of running totals per API key
 *   `metering:model:<model_id>`  hash of running totals per model
 * Totals are Redis integers (64-bit signed): cost_pico_usd overflows beyond 9.2 million USD per
 * key or model, far beyond what one deployment bills between resets.
 */
export const EVENT_PREFIX = 'metering:event:';
/** Prefix of the per-key totals hashes. */
export const KEY_TOTALS_PREFIX = 'metering:key:';
/** Prefix of the per-model totals hashes. */
export const MODEL_TOTALS_PREFIX = 'metering:model:';

/**
 * How long an event record (and so its de-duplication) lasts. JetStream gives up redelivering a
 * message within hours, so a week leaves a wide margin.
 */
export const EVENT_TTL_SECONDS = 7 * 24 * 60 * 60;

/** One metered event as stored. */
export interface EventRecord {
  key_id: string;
  model_id: string;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cost_pico_usd: bigint;
  /** picoUsdToUsd(cost_pico_usd) as text: the same number the edge reports as gateway.cost_usd. */
  cost_usd: string;
  /** The gateway.usage.v1.Outcome name. */
  outcome: string;
  received_at_ms: number;
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

// Writes an event and adds it to the totals, only if the event is new: all or nothing, so a
// redelivered event (or a crash between writes) can neither count twice nor half.
// KEYS: event, key totals, model totals.
// ARGV: ttl seconds, key_id, model_id, prompt, completion, cached, cost_pico_usd, cost_usd,
//       outcome, received_at_ms.
// Returns 1 when metered, 0 when the event was already metered.
const RECORD_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'key_id', ARGV[2], 'model_id', ARGV[3], 'prompt_tokens', ARGV[4],
  'completion_tokens', ARGV[5], 'cached_tokens', ARGV[6], 'cost_pico_usd', ARGV[7], 'cost_usd', ARGV[8],
  'outcome', ARGV[9], 'received_at_ms', ARGV[10])
redis.call('EXPIRE', KEYS[1], ARGV[1])
for i = 2, 3 do
  redis.call('HINCRBY', KEYS[i], 'requests', 1)
  redis.call('HINCRBY', KEYS[i], 'prompt_tokens', ARGV[4])
  redis.call('HINCRBY', KEYS[i], 'completion_tokens', ARGV[5])
  redis.call('HINCRBY', KEYS[i], 'cached_tokens', ARGV[6])
  redis.call('HINCRBY', KEYS[i], 'cost_pico_usd', ARGV[7])
end
return 1
`;

/**
 * Meters one event atomically; resolves true when it was new and counted, false when it had
 * already been metered (nothing changed). Rejects when Redis fails: then nothing changed either.
 */
export async function recordEvent(redis: Redis, eventId: string, record: EventRecord): Promise<boolean> {
  const result = await redis.eval(
    RECORD_SCRIPT, 3,
    EVENT_PREFIX + eventId, KEY_TOTALS_PREFIX + record.key_id, MODEL_TOTALS_PREFIX + record.model_id,
    String(EVENT_TTL_SECONDS), record.key_id, record.model_id,
    String(record.prompt_tokens), String(record.completion_tokens), String(record.cached_tokens),
    record.cost_pico_usd.toString(), record.cost_usd, record.outcome, String(record.received_at_ms),
  );
  return result === 1;
}

/** The stored record of an event, or undefined when it was never metered (or has expired). */
export async function eventRecord(redis: Redis, eventId: string): Promise<EventRecord | undefined> {
  const hash = await redis.hgetall(EVENT_PREFIX + eventId);
  if (!hash.key_id) return undefined;
  return {
    key_id: hash.key_id,
    model_id: hash.model_id,
    prompt_tokens: Number(hash.prompt_tokens),
    completion_tokens: Number(hash.completion_tokens),
    cached_tokens: Number(hash.cached_tokens),
    cost_pico_usd: BigInt(hash.cost_pico_usd),
    cost_usd: hash.cost_usd,
    outcome: hash.outcome,
    received_at_ms: Number(hash.received_at_ms),
  };
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
