import { parseCatalog } from '@gateway/catalog';
import { connectNats, stopConsumingService, usageStreamSettings } from '@gateway/messaging';
import { startMetricsServer, startTracing, startService } from '@gateway/observability';
import { createServer } from './app.js';
import { billableCatalog } from './billable-catalog.js';
import { loadMeteringConfig } from './config.js';
import { createRedis, guardEvictionPolicy } from '@gateway/redis';
import { loadScripts } from '@gateway/keyspace';
import { startRedisMemoryGauges } from './redis-memory-gauges.js';

const config = loadMeteringConfig(process.env);
// The shutdown exists before anything it closes: each resource registers its close as it opens
// (the last opened closes first).
const { logger, registry, lifecycle, reloadableFile } = startService('metering', config, { graceMs: config.METERING_SHUTDOWN_GRACE_MS });
// Prices are read per event: a price changed in the file prices the events metered after the reload.
const catalogFile = reloadableFile({ path: config.CATALOG_PATH, name: 'catalog', parse: parseCatalog }).start();
lifecycle.onStop(() => catalogFile.close());
// A model a reload removes is still billed for the requests it already ran.
const catalog = billableCatalog(catalogFile);
const redis = createRedis(config.REDIS_URL, logger);
lifecycle.onStop(() => redis.quit().catch(() => redis.disconnect()));
// Stored responses may live in a Redis of their own, which may evict (they are not state).
const responsesRedis = config.RESPONSES_REDIS_URL === '' ? redis : createRedis(config.RESPONSES_REDIS_URL, logger);
if (responsesRedis !== redis) lifecycle.onStop(() => responsesRedis.quit().catch(() => responsesRedis.disconnect()));
// Metering's state (metered totals, de-duplication records, settlements) must never be evicted.
await guardEvictionPolicy(redis, {
  allowEviction: config.REDIS_ALLOW_EVICTION,
  logger,
});
const redisMemory = startRedisMemoryGauges({
  clients: responsesRedis === redis ? { state: redis } : { state: redis, responses: responsesRedis },
  registry,
  logger,
});
lifecycle.onStop(() => redisMemory.stop());
// Every script loaded once Redis is ready, before the first events as a rule (a script Redis lacks
// is sent whole by the step that runs it, so this only keeps that off the first events).
void loadScripts(redis).then(
  () => logger.info({}, 'redis scripts loaded'),
  (error: unknown) =>
    logger.warn({ err: { message: error instanceof Error ? error.message : String(error) } }, 'redis scripts not loaded; each is sent on its first use'),
);
const nc = await connectNats(config.NATS_URL, 'metering', logger, registry);
const tracing = startTracing('metering');
lifecycle.onStop(() => tracing.shutdown());
// Ready once it consumes and its gRPC server listens, until shutdown.
let listening = false;
const metrics = await startMetricsServer(
  registry,
  config.METERING_METRICS_PORT,
  '0.0.0.0',
  () => listening && !lifecycle.shuttingDown && redis.status === 'ready' && !nc.isClosed(),
);
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
// The drain stops the gRPC server, then the consumers, then NATS, then the metrics server.
lifecycle.onSignal(() => metering.grpc.reportNotServing());
lifecycle.onStop(() => stopConsumingService(metering, nc, config.METERING_SHUTDOWN_GRACE_MS, metrics));
await metering.start();
const port = await metering.grpc.listen(config.METERING_LISTEN_ADDR);
listening = true;
logger.info(
  { address: config.METERING_LISTEN_ADDR, port, metrics_port: metrics.port, catalog_path: config.CATALOG_PATH, models: catalog.current.models.length },
  'metering running',
);
