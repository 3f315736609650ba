/**
 * Metering's dependencies, each opened with its close: the catalog's prices (reloaded), Redis (its
 * state, and stored responses, in a Redis of their own when RESPONSES_REDIS_URL is set), NATS and
 * tracing; the settings of its server from the config.
 */
import { parseCatalog } from '@gateway/catalog';
import { connectionAgeOf } from '@gateway/grpc';
import { loadScripts } from '@gateway/keyspace';
import { connectNats, usageStreamSettings } from '@gateway/messaging';
import type { RunContext } from '@gateway/observability';
import { closeRedis, createRedis, guardEvictionPolicy, type RedisClient } from '@gateway/redis';
import type { MeteringDependencies } from './app.js';
import { billableCatalog } from './billable-catalog.js';
import type { MeteringConfig } from './config.js';
import { startRedisMemoryGauges } from './redis-memory-gauges.js';

/** Metering's server's dependencies, with the catalog whose models the listening line counts. */
export type OpenedMeteringDependencies = MeteringDependencies & { catalog: ReturnType<typeof billableCatalog> };

/** Opens metering's dependencies; an evicting state Redis is refused (the process does not start). */
export async function openMeteringDependencies({
  config,
  logger,
  registry,
  open,
  tracing,
  reloadableFile,
}: RunContext<MeteringConfig>): Promise<OpenedMeteringDependencies> {
  // Prices are read per event: a price changed in the file prices the events metered after the reload.
  const catalogFile = open(reloadableFile({ path: config.CATALOG_PATH, name: 'catalog', parse: parseCatalog }).start(), (file) => file.close());
  // A model a reload removes is still billed for the requests it already ran.
  const catalog = billableCatalog(catalogFile);
  const redis = open(createRedis(config.REDIS_URL, logger), closeRedis);
  // Stored responses may live in a Redis of their own, which may evict (they are not state).
  const responsesRedis = config.RESPONSES_REDIS_URL === '' ? redis : open(createRedis(config.RESPONSES_REDIS_URL, logger), closeRedis);
  // Metering's state (metered totals, de-duplication records, settlements) must never be evicted.
  await guardEvictionPolicy(redis, { allowEviction: config.REDIS_ALLOW_EVICTION, logger });
  const clients: Record<string, RedisClient> = responsesRedis === redis ? { state: redis } : { state: redis, responses: responsesRedis };
  open(startRedisMemoryGauges({ clients, registry, logger }), (gauges) => gauges.stop());
  // Every script loaded once Redis is ready, before the first events as a rule (a script Redis lacks
  // is sent whole by the step that runs it, so this only keeps that off the first events).
  void loadScripts(redis).then(
    () => logger.info({}, 'redis scripts loaded'),
    (error: unknown) =>
      logger.warn({ err: { message: error instanceof Error ? error.message : String(error) } }, 'redis scripts not loaded; each is sent on its first use'),
  );
  // Drained by the drain (stopConsumingService), after the consumers.
  const nc = await connectNats(config.NATS_URL, 'metering', logger, registry);
  return {
    nc,
    redis,
    catalog,
    unknownModelGraceMs: config.METERING_UNKNOWN_MODEL_GRACE_MS,
    logger,
    registry,
    tracing: tracing(),
    ...usageStreamSettings(config),
    dedupRetentionMs: config.METERING_DEDUP_RETENTION_MS,
    redisReplicas: config.REDIS_WAIT_REPLICAS,
    quotaPrefix: config.AUTH_REDIS_PREFIX,
    responsesTtlSeconds: config.METERING_RESPONSES_TTL_SECONDS,
    responsesRedis,
    responseBounds: {
      maxPerKey: config.METERING_RESPONSES_MAX_PER_KEY,
      maxBytesPerKey: config.METERING_RESPONSES_MAX_BYTES_PER_KEY,
      maxTotalBytes: config.METERING_RESPONSES_MAX_TOTAL_BYTES,
    },
    connectionAge: connectionAgeOf(config),
  };
}
