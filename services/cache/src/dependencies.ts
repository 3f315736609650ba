/**
 * The cache's dependencies: its two Redis servers (REDIS_URL's for settings and purges,
 * CACHE_REDIS_URL's for entries) and the settings of its server from the config, each resource
 * opened with its close.
 */
import { connectionAgeOf } from '@gateway/grpc';
import type { RunContext } from '@gateway/observability';
import { closeRedis, createRedis } from '@gateway/redis';
import type { CacheDependencies } from './app.js';
import type { CacheConfig } from './config.js';

/** Opens both Redis clients; the rest comes from the config. */
export function openCacheDependencies({ config, logger, registry, open }: RunContext<CacheConfig>): CacheDependencies {
  return {
    redis: open(createRedis(config.REDIS_URL, logger), closeRedis),
    // Single commands on the request path: no pipelining behind another caller's batch.
    cacheRedis: open(createRedis(config.CACHE_REDIS_URL, logger, { autoPipelining: false }), closeRedis),
    logger,
    registry,
    prefix: config.CACHE_REDIS_PREFIX,
    auditPrefix: config.CACHE_AUDIT_PREFIX,
    reloadIntervalMs: config.CACHE_RELOAD_INTERVAL_MS,
    maxEntryBytes: config.CACHE_MAX_ENTRY_BYTES,
    semanticMaxBytes: config.CACHE_SEMANTIC_MAX_BYTES,
    connectionAge: connectionAgeOf(config),
  };
}
