import { costPicoUsd, type Catalog } from '@gateway/catalog';
import type { Logger } from '@gateway/logger';
import { PoisonMessageError } from '@gateway/messaging';
import { DEFAULT_QUOTA_PREFIX } from '@gateway/quota';
import { endWithError, NO_TRACING, prometheus, SpanKind, type Tracing } from '@gateway/observability';
import type { UsageEventOutput } from '@gateway/proto';
import type { RedisClient } from '@gateway/redis';
import { isMeteredEarlier, METERED_KEYS, recordEvent } from './usage-store.js';

/** What metering needs to price and store events. */
export interface UsageMeterDependencies {
  redis: RedisClient;
  /** The whole catalog: a disabled model can still have usage in flight, and it is still billed. */
  catalog: Catalog;
  logger: Logger;
  registry?: prometheus.Registry;
  /** The usage stream the events come from: their de-duplication records are kept per stream. */
  stream: string;
  /** auth's Redis key prefix, where the reservations the events settle live (DEFAULT_QUOTA_PREFIX). */
  quotaPrefix?: string;
  /** The stream sequence up to which de-duplication records may go (0: none yet); see createServer. */
  pruneThrough?: () => number;
  /** Whether the earlier layout's de-duplication set of the stream may still hold records. */
  earlierRecords?: () => boolean;
  /** Redis replicas that must have an event's write before its message is acknowledged (REDIS_WAIT_REPLICAS). */
  redisReplicas?: number;
  /** Traces (OTLP), when configured: a span per event, in the request's trace. */
  tracing?: Tracing;
}

/** How many key ids a meter remembers as listed in METERED_KEYS before it starts over. */
const LISTED_KEYS_CACHE_SIZE = 200_000;

/** The metering outcome of one event. */
export type MeterResult = 'metered' | 'duplicate';

/** Meters one event, delivered at `sequence` of the usage stream: see createUsageMeter. */
export type UsageMeter = (event: UsageEventOutput, sequence: number) => Promise<MeterResult>;

/**
 * Creates the function that meters one usage event: it prices the event with the catalog's
 * pricing and costPicoUsd (the function the edge uses for gateway.cost_usd, so both agree to the
 * pico-dollar) and records it atomically, once per event id, settling the request's quota
 * reservation (UsageEvent.reservation_id) in the same step. Throws PoisonMessageError for an
 * event that can never be metered (no event id or key id, a model the catalog does not know);
 * a Redis failure rejects as is, so the message is redelivered.
 */
export function createUsageMeter(dependencies: UsageMeterDependencies): UsageMeter {
  const { redis, catalog, logger } = dependencies;
  const quotaPrefix = dependencies.quotaPrefix ?? DEFAULT_QUOTA_PREFIX;
  const registers = dependencies.registry ? [dependencies.registry] : [];
  const events = new prometheus.Counter({ name: 'gateway_metering_events_total', help: 'Usage events processed, by result (metered, duplicate).', labelNames: ['result'], registers });
  const mismatches = new prometheus.Counter({ name: 'gateway_metering_cost_mismatch_total', help: 'Events whose cost reported by the edge differs from the metered cost.', registers });
  const tokens = new prometheus.Counter({ name: 'gateway_metering_tokens_total', help: 'Metered tokens, by kind (prompt, completion, cached).', labelNames: ['kind'], registers });
  const unreplicated = new prometheus.Counter({ name: 'gateway_metering_unreplicated_total', help: 'Events acknowledged although fewer Redis replicas than REDIS_WAIT_REPLICAS had their write in time.', registers });
  // Key ids already in METERED_KEYS: a key is added once per process, before its first event.
  const listed = new Set<string>();

  const tracing = dependencies.tracing ?? NO_TRACING;
  const meter: UsageMeter = async (event, sequence) => {
    const eventId = event.event_id ?? '';
    const keyId = event.key_id ?? '';
    const modelId = event.model_id ?? '';
    if (!eventId) throw new PoisonMessageError('missing_event_id', 'usage event without event_id');
    if (!keyId) throw new PoisonMessageError('missing_key_id', `usage event ${eventId} without key_id`);
    const model = catalog.byId.get(modelId);
    if (!model) throw new PoisonMessageError('unknown_model', `usage event ${eventId} names model "${modelId}", which the catalog does not have`);

    const usage = { prompt_tokens: event.usage?.prompt_tokens ?? 0, completion_tokens: event.usage?.completion_tokens ?? 0, cached_tokens: event.usage?.cached_tokens ?? 0 };
    const cost = costPicoUsd(model.pricing, usage);
    const reservationId = event.reservation_id ?? '';
    const settlement = reservationId ? { reservationId, actualTokens: event.usage?.total_tokens ?? 0, prefix: quotaPrefix } : undefined;
    if (!listed.has(keyId)) {
      await redis.sadd(METERED_KEYS, keyId);
      if (listed.size >= LISTED_KEYS_CACHE_SIZE) listed.clear();
      listed.add(keyId);
    }
    const meteredEarlier = dependencies.earlierRecords?.() === true && await isMeteredEarlier(redis, dependencies.stream, eventId);
    const metered = !meteredEarlier && await recordEvent(redis, dependencies.stream, eventId, sequence, { key_id: keyId, model_id: modelId, ...usage, cost_pico_usd: cost }, settlement, {
      pruneThrough: dependencies.pruneThrough?.() ?? 0,
      replicas: dependencies.redisReplicas ?? 0,
      onUnreplicated: () => unreplicated.inc(),
    });
    if (!metered) {
      events.inc({ result: 'duplicate' });
      logger.debug({ event_id: eventId }, 'usage event already metered');
      return 'duplicate';
    }
    events.inc({ result: 'metered' });
    tokens.inc({ kind: 'prompt' }, usage.prompt_tokens);
    tokens.inc({ kind: 'completion' }, usage.completion_tokens);
    tokens.inc({ kind: 'cached' }, usage.cached_tokens);
    // proto3 cannot tell an unset int64 from 0, so 0 means "the edge reported nothing".
    const reported = event.reported_cost_pico_usd ?? 0;
    if (reported !== 0 && BigInt(Math.trunc(reported)) !== cost) {
      mismatches.inc();
      logger.warn({ event_id: eventId, request_id: event.request_id, key_id: keyId, model_id: modelId, reported_cost_pico_usd: reported, cost_pico_usd: cost.toString() }, 'reported cost differs from metered cost');
    }
    return 'metered';
  };
  if (!tracing.enabled) return meter;
  // Each event in a span of its own, a child of the edge's span of its request.
  return async (event, sequence) => {
    const span = tracing.startSpan('metering.record', {
      kind: SpanKind.CONSUMER,
      parent: event.traceparent || undefined,
      attributes: { 'messaging.system': 'nats', 'messaging.destination.name': dependencies.stream, 'gen_ai.response.model': event.model_id ?? '', 'gen_ai.usage.input_tokens': event.usage?.prompt_tokens ?? 0, 'gen_ai.usage.output_tokens': event.usage?.completion_tokens ?? 0 },
    });
    try {
      const result = await meter(event, sequence);
      span?.setAttribute('gateway.metering.result', result);
      span?.end();
      return result;
    } catch (error) {
      endWithError(span, error instanceof PoisonMessageError ? error.reason : 'store_unavailable');
      throw error;
    }
  };
}
