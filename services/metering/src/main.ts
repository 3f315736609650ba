import { parseCatalog } from '@gateway/catalog';
import { loadScripts } from '@gateway/keyspace';
import { connectNats, stopConsumingService, usageStreamSettings } from '@gateway/messaging';
import { runService, startTracing } from '@gateway/observability';
import { createRedis, guardEvictionPolicy, type RedisClient } from '@gateway/redis';
import { createServer } from './app.js';
import { billableCatalog } from './billable-catalog.js';
import { loadMeteringConfig } from './config.js';
import { startRedisMemoryGauges } from './redis-memory-gauges.js';

const quit = (client: RedisClient) => client.quit().catch(() => client.disconnect());

/** Metering: the catalog's prices, Redis (state, and stored responses), the usage consumers and the gRPC server. */
await runService({
  name: 'metering',
  config: loadMeteringConfig,
  shutdown: (config) => ({ graceMs: config.METERING_SHUTDOWN_GRACE_MS }),
  async open({ config, logger, registry, open, metrics, reloadableFile }) {
    // Prices are read per event: a price changed in the file prices the events metered after the reload.
    const catalogFile = open(reloadableFile({ path: config.CATALOG_PATH, name: 'catalog', parse: parseCatalog }).start(), (file) => file.close());
    // A model a reload removes is still billed for the requests it already ran.
    const catalog = billableCatalog(catalogFile);
    const redis = open(createRedis(config.REDIS_URL, logger), quit);
    // Stored responses may live in a Redis of their own, which may evict (they are not state).
    const responsesRedis = config.RESPONSES_REDIS_URL === '' ? redis : open(createRedis(config.RESPONSES_REDIS_URL, logger), quit);
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
    const nc = await connectNats(config.NATS_URL, 'metering', logger, registry);
    const tracing = open(startTracing('metering'), (opened) => opened.shutdown());
    // Closed by the drain, after the consumers and NATS.
    const metricsServer = await metrics(config.METERING_METRICS_PORT);
    const metering = createServer({
      nc,
      redis,
      catalog,
      unknownModelGraceMs: config.METERING_UNKNOWN_MODEL_GRACE_MS,
      logger,
      registry,
      tracing,
      ...usageStreamSettings(config),
      dedupRetentionMs: config.METERING_DEDUP_RETENTION_MS,
      redisReplicas: config.REDIS_WAIT_REPLICAS,
      responsesTtlSeconds: config.METERING_RESPONSES_TTL_SECONDS,
      responsesRedis,
      responseBounds: {
        maxPerKey: config.METERING_RESPONSES_MAX_PER_KEY,
        maxBytesPerKey: config.METERING_RESPONSES_MAX_BYTES_PER_KEY,
        maxTotalBytes: config.METERING_RESPONSES_MAX_TOTAL_BYTES,
      },
      connectionAge: { maxAgeMs: config.GRPC_MAX_CONNECTION_AGE_MS, graceMs: config.GRPC_MAX_CONNECTION_AGE_GRACE_MS },
    });
    return {
      reportNotServing: () => metering.grpc.reportNotServing(),
      // The gRPC server, then the consumers, then NATS, then the metrics server.
      drain: () => stopConsumingService(metering, nc, config.METERING_SHUTDOWN_GRACE_MS, metricsServer),
      beforeListen: () => metering.start(),
      listen: () => metering.grpc.listen(config.METERING_LISTEN_ADDR),
      ready: () => redis.status === 'ready' && !nc.isClosed(),
      listening: (port) => [
        {
          address: config.METERING_LISTEN_ADDR,
          port,
          metrics_port: metricsServer.port,
          catalog_path: config.CATALOG_PATH,
          models: catalog.current.models.length,
        },
        'metering running',
      ],
    };
  },
});
