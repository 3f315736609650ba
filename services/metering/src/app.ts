import type { Catalog } from '@gateway/catalog';
import { connectionAgeOptions, createGatewayServer, type ConnectionAge, type GatewayServer } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import {
  ConsumerStart,
  decodeUsageEvents,
  PoisonMessageError,
  USAGE_STREAM,
  USAGE_SUBJECT,
  type NatsConnection,
  type RunningConsumer,
} from '@gateway/messaging';
import { metric, type prometheus, serviceMetrics, type Tracing } from '@gateway/observability';
import { loadGatewayGrpc, type RecordUsageEventsResponse, type UsageEventOutput } from '@gateway/proto';
import type { StoredResponseBounds } from '@gateway/keyspace';
import type { RedisClient } from '@gateway/redis';
import { createConsumerLag } from './consumer-lag.js';
import { createUsageStreamUse } from './usage-stream-use.js';
import { createResponseStoreService, RESPONSE_STORE_SERVICE_NAME } from './response-store-service.js';
import { createUsageMeter, type CatalogSource, type UsageMeter } from './usage-meter.js';
import { DedupPruning } from './dedup-pruning.js';
import { createUsageService } from './usage-service.js';

/** The fully qualified name the UsageService is registered and health-checked under. */
export const USAGE_SERVICE_NAME = 'gateway.usage.v1.UsageService';

/** The durable consumer name: every metering replica shares it, so each event goes to one. */
export const METERING_DURABLE = 'metering';

/** What metering is wired from; the stream fields exist so tests can use a stream of their own. */
export interface MeteringDependencies {
  nc: NatsConnection;
  redis: RedisClient;
  /** The catalog, or the reloaded catalog file: see UsageMeterDependencies.catalog. */
  catalog: Catalog | CatalogSource;
  /** How long an event naming a model the catalog lacks is retried before it is poison (ms; 0: at once). */
  unknownModelGraceMs?: number;
  logger: Logger;
  registry?: prometheus.Registry;
  stream?: string;
  subjects?: string[];
  /** Copies of each event the stream keeps (USAGE_STREAM_REPLICAS); 1 when not given. */
  replicas?: number;
  /** How long the stream keeps an event, ms (USAGE_STREAM_MAX_AGE_HOURS); USAGE_MAX_AGE_MS when not given. */
  maxAgeMs?: number;
  /** The most bytes the stream holds (USAGE_STREAM_MAX_BYTES); USAGE_MAX_BYTES when not given. */
  maxBytes?: number;
  subject?: string;
  durableName?: string;
  /** Redelivery delays after a failure; see DurableConsumerOptions.backoffMs. */
  backoffMs?: number[];
  /** How long an acknowledged event's de-duplication record is kept (DEFAULT_DEDUP_RETENTION_MS). */
  dedupRetentionMs?: number;
  /** How often the records below the consumer's ack floor are pruned (DEFAULT_DEDUP_PRUNE_INTERVAL_MS). */
  dedupPruneIntervalMs?: number;
  /** auth's Redis key prefix, where the reservations that events settle live (DEFAULT_AUTH_PREFIX). */
  quotaPrefix?: string;
  /** Redis replicas that must have an event's write before its message is acknowledged (REDIS_WAIT_REPLICAS). */
  redisReplicas?: number;
  /** Traces (OTLP), when configured; off by default. */
  tracing?: Tracing;
  /** The server's connection age and grace (GRPC_MAX_CONNECTION_AGE_MS, ..._GRACE_MS); the defaults of @gateway/grpc when absent. */
  connectionAge?: ConnectionAge;
  /** How often the consumer's lag is read (DEFAULT_CONSUMER_LAG_INTERVAL_MS). */
  lagIntervalMs?: number;
  /** How long a stored response of the Responses API is kept (METERING_RESPONSES_TTL_SECONDS; 30 days when not given). */
  responsesTtlSeconds?: number;
  /** The Redis of stored responses (RESPONSES_REDIS_URL); `redis` when not given. */
  responsesRedis?: RedisClient;
  /** The stored responses' bounds per key and in total (DEFAULT_RESPONSE_BOUNDS when not given). */
  responseBounds?: StoredResponseBounds;
}

/**
 * How long the de-duplication record of an acknowledged event is kept. JetStream never delivers an
 * acknowledged message again; what this retention covers is a publisher that lost the stream's
 * acknowledgement and publishes the event again after the stream's two-minute duplicate window (a
 * NATS outage that long): such a copy is still caught for this long.
 */
export const DEFAULT_DEDUP_RETENTION_MS = 10 * 60_000;

/** How often records below the consumer's ack floor are pruned. */
export const DEFAULT_DEDUP_PRUNE_INTERVAL_MS = 10_000;

/**
 * The stream sequence an event handed over by an edge (RecordUsageEvents) is recorded under: above
 * any real one, so its de-duplication record is never pruned below the ack floor and lasts until
 * its key's set expires (the stream's maximum age and a day). A copy of it the stream stored (its
 * acknowledgement lost in the outage) can be consumed any time within that age, and must be
 * recognised then.
 */
export const HANDED_OVER_SEQUENCE = Number.MAX_SAFE_INTEGER;

/** Every reason a usage message or event is poison, each exported from 0 so that increase() sees the first. */
export const POISON_REASONS = ['undecodable', 'missing_event_id', 'missing_key_id', 'invalid_team_id', 'unknown_model'] as const;

/** Metering, wired and not yet started. */
export interface MeteringServer {
  /** Serves the UsageService (usage read back), the ResponseStoreService (stored responses) and grpc.health.v1; listen on METERING_LISTEN_ADDR. */
  readonly grpc: GatewayServer;
  /** Ensures the usage stream and the durable consumer, then consumes. */
  start(): Promise<void>;
  /** Stops consuming once the event being metered is acknowledged. */
  stop(): Promise<void>;
}

/**
 * Wires the usage consumer: every event on USAGE_SUBJECT is priced and recorded once, acknowledged
 * only after Redis has it, terminated and counted when it can never be metered.
 */
export function createServer(dependencies: MeteringDependencies): MeteringServer {
  const { nc, logger } = dependencies;
  const stream = dependencies.stream ?? USAGE_STREAM;
  const durableName = dependencies.durableName ?? METERING_DURABLE;
  // biome-ignore format: one metric a line, a table of name, help and the label each is counted by
  const metrics = serviceMetrics(dependencies.registry, {
    storeErrors: metric.counterBy('gateway_metering_store_errors_total', 'Redis operations of metering that failed, by operation (record: metering an event, its WAIT included; prune; read: the usage API).', 'operation', ['record', 'prune', 'read']),
    poison: metric.counterBy('gateway_metering_poison_messages_total', 'Usage messages terminated because they can never be metered, by reason.', 'reason', POISON_REASONS),
    records: metric.gauge('gateway_metering_dedup_records', 'De-duplication records held in Redis (events in flight plus the retention), after the last prune; NaN (unknown) when the last prune failed.'),
  });
  const { storeErrors } = metrics;
  const pruning = new DedupPruning({
    nc,
    redis: dependencies.redis,
    stream,
    durableName,
    retentionMs: dependencies.dedupRetentionMs ?? DEFAULT_DEDUP_RETENTION_MS,
    intervalMs: dependencies.dedupPruneIntervalMs ?? DEFAULT_DEDUP_PRUNE_INTERVAL_MS,
    logger,
    records: metrics.records,
    onError: () => storeErrors.inc({ operation: 'prune' }),
  });
  const meter = createUsageMeter({
    ...dependencies,
    stream,
    onStoreError: () => storeErrors.inc({ operation: 'record' }),
    pruneThrough: () => pruning.pruneThrough,
    earlierRecords: () => pruning.earlierRecords,
    redisReplicas: dependencies.redisReplicas,
  });
  const meterAll = meteringTogether(meter, metrics.poison, logger);
  const lag = createConsumerLag({ nc, stream, durableName, logger, registry: dependencies.registry, intervalMs: dependencies.lagIntervalMs });
  const streamUse = createUsageStreamUse({ nc, stream, logger, registry: dependencies.registry, intervalMs: dependencies.lagIntervalMs });

  let consumer: RunningConsumer | undefined;
  const starting = new ConsumerStart(nc, logger, 'usage stream not reachable at start; retrying');
  return {
    grpc: meteringGrpc(dependencies, { onReadError: () => storeErrors.inc({ operation: 'read' }), record: (events) => meterAll(events, HANDED_OVER_SEQUENCE) }),
    start: async () => {
      // JetStream may not answer at start (a NATS cluster electing a leader, a server replaced):
      // metering waits for it, retrying, rather than exiting and leaving usage unmetered.
      await starting.usageStream(stream, dependencies);
      // Most deployments never had the earlier layout: no extra lookup per event for them.
      await pruning.readEarlierRecords();
      // Read before consuming: what a restarted metering finds waiting is reported, not only what is left later.
      await lag.start();
      await streamUse.start();
      consumer = await starting.consumer<UsageEventOutput[]>({
        stream,
        durableName,
        filterSubject: dependencies.subject ?? USAGE_SUBJECT,
        decode: decodeUsageEvents,
        // The events of one message (a batch, or one event) are metered together (meterAll); a
        // failure has the whole message redelivered.
        handle: async (events, delivery) => {
          await meterAll(events, delivery.seq);
        },
        onPoison: (reason) => metrics.poison.inc({ reason }),
        backoffMs: dependencies.backoffMs,
        logger,
      });
      pruning.schedule();
    },
    stop: async () => {
      starting.cancel();
      pruning.stop();
      lag.stop();
      streamUse.stop();
      await consumer?.stop();
      consumer = undefined;
    },
  };
}

/**
 * Meters the events of one message, or of one RecordUsageEvents call, together: an event that can
 * never be metered is counted and skipped without its neighbours; any other failure rejects once
 * all are settled, and the events already metered are recognised by their ids when sent again.
 */
function meteringTogether(meter: UsageMeter, poison: prometheus.Counter<'reason'>, logger: Logger) {
  return async (events: UsageEventOutput[], sequence: number): Promise<RecordUsageEventsResponse> => {
    const results = await Promise.allSettled(events.map((event) => meter(event, sequence)));
    const counts = { metered: 0, duplicates: 0, poison: 0 };
    let failure: unknown;
    for (const result of results) {
      if (result.status === 'fulfilled') {
        if (result.value === 'metered') counts.metered += 1;
        else counts.duplicates += 1;
      } else if (result.reason instanceof PoisonMessageError) {
        counts.poison += 1;
        poison.inc({ reason: result.reason.reason });
        logger.error({ err: result.reason, reason: result.reason.reason, stream_sequence: sequence }, 'usage event can never be metered; skipped');
      } else failure ??= result.reason;
    }
    if (failure !== undefined) throw failure;
    return counts;
  };
}

/** The gRPC server: the UsageService (usage read back, and events an edge hands over) and the ResponseStoreService. */
function meteringGrpc(
  dependencies: MeteringDependencies,
  served: { onReadError: () => void; record: (events: UsageEventOutput[]) => Promise<RecordUsageEventsResponse> },
): GatewayServer {
  return createGatewayServer(
    [
      {
        name: USAGE_SERVICE_NAME,
        definition: loadGatewayGrpc().gateway.usage.v1.UsageService.service,
        handlers: createUsageService({
          redis: dependencies.redis,
          logger: dependencies.logger,
          onStoreError: served.onReadError,
          record: served.record,
        }),
      },
      {
        name: RESPONSE_STORE_SERVICE_NAME,
        definition: loadGatewayGrpc().gateway.responses.v1.ResponseStoreService.service,
        handlers: createResponseStoreService({
          ...dependencies,
          redis: dependencies.responsesRedis ?? dependencies.redis,
          ttlSeconds: dependencies.responsesTtlSeconds,
          bounds: dependencies.responseBounds,
        }),
      },
    ],
    connectionAgeOptions(dependencies.connectionAge),
  );
}
