import type { Catalog } from '@gateway/catalog';
import type { Logger } from '@gateway/logger';
import { PoisonMessageError } from '@gateway/messaging';
import { DEFAULT_AUTH_PREFIX, METERED_KEY_TEAMS, METERED_KEYS } from '@gateway/keyspace';
import { endWithError, metric, NO_TRACING, type prometheus, serviceMetrics, SpanKind, type Tracing } from '@gateway/observability';
import type { UsageEventOutput } from '@gateway/proto';
import { ReplicaWaiter, type RedisClient } from '@gateway/redis';
import { isMeteredEarlier, recordEvent, type EventUsage } from './usage-store.js';
import { noteRecentKey } from './usage-buckets.js';
import { pricedEvent, recentJson } from './event-pricing.js';

/** What metering needs to price and store events. */
export interface UsageMeterDependencies {
  redis: RedisClient;
  /**
   * The whole catalog (a disabled model can still have usage in flight, and it is still billed),
   * or a reloaded catalog file (its `current` is read per event, so a price changed in the file
   * prices the events metered after the reload).
   */
  catalog: Catalog | CatalogSource;
  /**
   * How long after its request an event naming a model the catalog lacks is retried rather than
   * terminated (ms; 0 when not given): the edges may serve a model added to the catalog before
   * this replica's copy of the file shows it (a ConfigMap reaches each pod on its own schedule).
   */
  unknownModelGraceMs?: number;
  logger: Logger;
  registry?: prometheus.Registry;
  /** The usage stream the events come from: their de-duplication records are kept per stream. */
  stream: string;
  /** auth's Redis key prefix, where the reservations the events settle live (DEFAULT_AUTH_PREFIX). */
  quotaPrefix?: string;
  /** The stream sequence up to which de-duplication records may go (0: none yet); see createServer. */
  pruneThrough?: () => number;
  /** Whether the earlier layout's de-duplication set of the stream may still hold records. */
  earlierRecords?: () => boolean;
  /** Redis replicas that must have an event's write before its message is acknowledged (REDIS_WAIT_REPLICAS). */
  redisReplicas?: number;
  /** How long the stream keeps an event (USAGE_STREAM_MAX_AGE_HOURS, ms); USAGE_MAX_AGE_MS when not given. */
  maxAgeMs?: number;
  /** Traces (OTLP), when configured: a span per event, in the request's trace. */
  tracing?: Tracing;
  /** Told of each event Redis failed to meter (gateway_metering_store_errors_total). */
  onStoreError?: () => void;
}

/** A catalog that may change: a ReloadableFile of @gateway/config fits. */
export interface CatalogSource {
  readonly current: Catalog;
  /** Reads the file now, taking a change at once (before an event is given up on). */
  check?(): unknown;
}

/** How many key ids a meter remembers as listed in METERED_KEYS before it starts over. */
const LISTED_KEYS_CACHE_SIZE = 200_000;
/**
 * How often a meter refreshes a key's place among the recently active keys: RECENT_KEYS is one
 * sorted set every key shares, so it is written at most this often per key and process, never
 * once per request.
 */
const RECENT_KEY_REFRESH_MS = 5_000;

/** The counters of a meter, registered in `registry` when given: each a row of the shared metric table. */
function meterCounters(registry: prometheus.Registry | undefined) {
  // biome-ignore format: one metric a line, a table of name, help and the label each is counted by
  return serviceMetrics(registry, {
    events: metric.counterBy('gateway_metering_events_total', 'Usage events processed, by result (metered, duplicate).', 'result'),
    mismatches: metric.counter('gateway_metering_cost_mismatch_total', 'Events whose cost reported by the edge differs from the metered cost.'),
    tokens: metric.counterBy('gateway_metering_tokens_total', 'Metered tokens, by kind (prompt, completion, cached, cache_write).', 'kind'),
    unreplicated: metric.counter('gateway_metering_unreplicated_total', 'Events acknowledged although fewer Redis replicas than REDIS_WAIT_REPLICAS had their write in time.'),
  });
}

/**
 * The catalog model of an event that can be metered; throws PoisonMessageError for one that can
 * never be (no event id or key id, a model the catalog does not know, once the file was read
 * again and the grace after the request has passed). Within the grace an unknown model is a
 * plain error: the message is redelivered later, when this replica's catalog may have it.
 */
function meterableModel(event: UsageEventOutput, source: CatalogSource, graceMs: number, lookAgain: () => void) {
  const eventId = event.event_id ?? '';
  const modelId = event.model_id ?? '';
  if (!eventId) throw new PoisonMessageError('missing_event_id', 'usage event without event_id');
  if (!event.key_id) throw new PoisonMessageError('missing_key_id', `usage event ${eventId} without key_id`);
  if (event.team_id && !TEAM_ID.test(event.team_id)) throw new PoisonMessageError('invalid_team_id', `usage event ${eventId} names a malformed team_id`);
  // A tool call of the MCP gateway names its tool, not a model: a request without tokens or cost.
  if (isToolCall(event)) return undefined;
  let model = source.current.byId.get(modelId);
  if (!model) {
    lookAgain();
    model = source.current.byId.get(modelId);
  }
  if (model) return model;
  const receivedAtMs = Number(event.received_at_ms ?? 0);
  if (graceMs > 0 && Date.now() - receivedAtMs < graceMs)
    throw new Error(`usage event ${eventId} names model "${modelId}", which the catalog does not have yet; retrying`);
  throw new PoisonMessageError('unknown_model', `usage event ${eventId} names model "${modelId}", which the catalog does not have`);
}

/**
 * Whether an event is a tool call of the MCP gateway (operation `mcp.tools/call`, model_id the
 * namespaced tool `<server>__<tool>`): metered as a request, with no tokens and no cost.
 */
function isToolCall(event: UsageEventOutput): boolean {
  return (event.operation ?? '').startsWith('mcp.');
}

/** What a team id looks like (auth's `team_` and 16 letters or digits). */
const TEAM_ID = /^team_[A-Za-z0-9]{16}$/;

/** The metering outcome of one event. */
export type MeterResult = 'metered' | 'duplicate';

/** Meters one event, delivered at `sequence` of the usage stream: see createUsageMeter. */
export type UsageMeter = (event: UsageEventOutput, sequence: number) => Promise<MeterResult>;

/**
 * Creates the function that meters one usage event: it prices the event with the catalog's
 * pricing and costPicoUsd (the function the edge uses for gateway.cost_usd, so both agree to the
 * pico-dollar) and records it atomically, once per event id, settling the request's quota
 * reservation (UsageEvent.reservation_id) in the same step. A response-cache hit is metered at
 * its hit cost instead (see cacheHitOf). Throws PoisonMessageError for an event that can never be
 * metered (no event id or key id, a model the catalog does not know); a Redis failure rejects as
 * is, so the message is redelivered.
 */
export function createUsageMeter(dependencies: UsageMeterDependencies): UsageMeter {
  const { redis, logger } = dependencies;
  const catalog: CatalogSource = 'current' in dependencies.catalog ? dependencies.catalog : { current: dependencies.catalog };
  const unknownModelGraceMs = dependencies.unknownModelGraceMs ?? 0;
  // At most one read of the file a second, however many events name a model it lacks.
  let lookedAt = 0;
  const lookAgain = () => {
    if (!catalog.check || Date.now() - lookedAt < 1_000) return;
    lookedAt = Date.now();
    catalog.check();
  };
  const quotaPrefix = dependencies.quotaPrefix ?? DEFAULT_AUTH_PREFIX;
  const counters = meterCounters(dependencies.registry);
  // One WAIT per master node at a time, bounded, shared by the events written meanwhile.
  const replicas = (dependencies.redisReplicas ?? 0) > 0 ? new ReplicaWaiter(redis, { replicas: dependencies.redisReplicas! }) : undefined;
  // Key ids already in METERED_KEYS: a key is added once per process, before its first event.
  const listed = new Set<string>();
  // When each key was last noted among the recently active keys.
  const noted = new Map<string, number>();

  const tracing = dependencies.tracing ?? NO_TRACING;
  /** Lists a key in METERED_KEYS (and its team in METERED_KEY_TEAMS) before its first event, once per process. */
  const listKey = async (keyId: string, teamId: string) => {
    if (listed.has(keyId)) return;
    // The team first: a reader that finds the key finds where its usage lives.
    if (teamId) await redis.hset(METERED_KEY_TEAMS, keyId, teamId);
    await redis.sadd(METERED_KEYS, keyId);
    if (listed.size >= LISTED_KEYS_CACHE_SIZE) listed.clear();
    listed.add(keyId);
  };
  /** Refreshes a key's place among the recently active keys, at most every RECENT_KEY_REFRESH_MS. */
  const noteKey = async (keyId: string, receivedAtMs: number) => {
    const now = Date.now();
    if (now - (noted.get(keyId) ?? 0) < RECENT_KEY_REFRESH_MS) return;
    if (noted.size >= LISTED_KEYS_CACHE_SIZE) noted.clear();
    noted.set(keyId, now);
    // Only which keys the console looks at first: a failure here loses no usage.
    await noteRecentKey(redis, keyId, receivedAtMs || now).catch((error: unknown) => logger.warn({ err: error }, 'could not note a recently active key'));
  };
  /**
   * Meters a priced event unless the earlier layout remembers it, settling its reservation with
   * `settledTokens`; resolves whether it was new.
   */
  const record = async (event: UsageEventOutput, sequence: number, usage: EventUsage, settledTokens: number) => {
    const eventId = event.event_id!;
    const meteredEarlier = dependencies.earlierRecords?.() === true && (await isMeteredEarlier(redis, dependencies.stream, eventId));
    if (meteredEarlier) return false;
    const reservationId = event.reservation_id ?? '';
    const settlement = reservationId ? { reservationId, actualTokens: settledTokens, prefix: quotaPrefix } : undefined;
    return recordEvent(
      redis,
      { stream: dependencies.stream, eventId, sequence, usage, ...(settlement && { settlement }) },
      { pruneThrough: dependencies.pruneThrough?.() ?? 0, replicas, onUnreplicated: () => counters.unreplicated.inc(), maxAgeMs: dependencies.maxAgeMs },
    );
  };
  const meterOnce: UsageMeter = async (event, sequence) => {
    const model = meterableModel(event, catalog, unknownModelGraceMs, lookAgain);
    const keyId = event.key_id!;
    const modelId = event.model_id!;
    const { answered, tokenCounts, cost, hit } = pricedEvent(event, model);
    const teamId = event.team_id ?? '';
    await listKey(keyId, teamId);
    const receivedAtMs = Number(event.received_at_ms ?? 0);
    const usage: EventUsage = {
      key_id: keyId,
      ...(teamId && { team_id: teamId }),
      model_id: modelId,
      ...tokenCounts,
      cost_pico_usd: cost,
      received_at_ms: receivedAtMs,
      failed: event.outcome === 'OUTCOME_FAILED',
      fell_back: (event.fallback_attempts ?? 0) > 0,
      ...(hit && { cache_hit: true, saved_cost_pico_usd: hit.savedCostPicoUsd }),
      recent: recentJson(event, answered, cost),
    };
    if (!(await record(event, sequence, usage, hit ? hit.settledTokens : (event.usage?.total_tokens ?? 0)))) {
      counters.events.inc({ result: 'duplicate' });
      logger.debug({ event_id: event.event_id }, 'usage event already metered');
      return 'duplicate';
    }
    counters.events.inc({ result: 'metered' });
    await noteKey(keyId, receivedAtMs);
    counters.tokens.inc({ kind: 'prompt' }, tokenCounts.prompt_tokens);
    counters.tokens.inc({ kind: 'completion' }, tokenCounts.completion_tokens);
    counters.tokens.inc({ kind: 'cached' }, tokenCounts.cached_tokens);
    counters.tokens.inc({ kind: 'cache_write' }, tokenCounts.cache_write_tokens);
    // proto3 cannot tell an unset int64 from 0, so 0 means "the edge reported nothing". A hit's
    // metered cost is its hit cost, which the edge reported too.
    const reported = event.reported_cost_pico_usd ?? 0;
    if (reported !== 0 && BigInt(Math.trunc(reported)) !== cost) {
      counters.mismatches.inc();
      logger.warn(
        {
          event_id: event.event_id,
          request_id: event.request_id,
          key_id: keyId,
          model_id: modelId,
          reported_cost_pico_usd: reported,
          cost_pico_usd: cost.toString(),
        },
        'reported cost differs from metered cost',
      );
    }
    return 'metered';
  };
  // Anything but a poison event is Redis failing (a command, a WAIT): counted, and redelivered.
  const meter: UsageMeter = (event, sequence) =>
    meterOnce(event, sequence).catch((error: unknown) => {
      if (!(error instanceof PoisonMessageError)) dependencies.onStoreError?.();
      throw error;
    });
  if (!tracing.enabled) return meter;
  // Each event in a span of its own, a child of the edge's span of its request.
  return async (event, sequence) => {
    const span = tracing.startSpan('metering.record', {
      kind: SpanKind.CONSUMER,
      parent: event.traceparent || undefined,
      attributes: {
        'messaging.system': 'nats',
        'messaging.destination.name': dependencies.stream,
        'gen_ai.response.model': event.model_id ?? '',
        'gen_ai.usage.input_tokens': event.usage?.prompt_tokens ?? 0,
        'gen_ai.usage.output_tokens': event.usage?.completion_tokens ?? 0,
      },
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
