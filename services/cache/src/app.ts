import { connectionAgeOptions, createGatewayServer, type ConnectionAge, type GatewayServer, withShutdownSteps } from '@gateway/grpc';
import { AuditLog } from '@gateway/keyspace';
import type { Logger } from '@gateway/logger';
import type { prometheus } from '@gateway/observability';
import { loadGatewayGrpc } from '@gateway/proto';
import { NO_EVICTION, readMemoryOfMasters, type RedisClient } from '@gateway/redis';
import { CacheAdmin } from './cache-admin.js';
import { createCacheMetrics } from './cache-metrics.js';
import { createCacheService } from './cache-service.js';
import { CacheState } from './cache-state.js';
import { EntryStore } from './entries.js';

/** What the cache is wired from; main.ts builds these from the config, tests build their own. */
export interface CacheDependencies {
  /** REDIS_URL's Redis: the settings and purges (never evicts). */
  redis: RedisClient;
  /** CACHE_REDIS_URL's Redis: the entries (bounded, evicting). */
  cacheRedis: RedisClient;
  logger: Logger;
  registry?: prometheus.Registry;
  /** CACHE_REDIS_PREFIX. */
  prefix: string;
  /** CACHE_AUDIT_PREFIX: auth's prefix, whose audit trail gets each change; '' for none. */
  auditPrefix?: string;
  reloadIntervalMs: number;
  maxEntryBytes: number;
  connectionAge?: ConnectionAge;
}

/** The unstarted cache: its gRPC server, and its state to start beside it. */
export interface CacheApp {
  server: GatewayServer;
  state: CacheState;
  /** Reads whether the entries' Redis is bounded (gateway_cache_redis_bounded), logging an error when not. */
  checkBounded(): Promise<void>;
}

/** How often the entries' Redis's bounds are read again. */
const BOUNDS_INTERVAL_MS = 60_000;

/**
 * The cache's unstarted gRPC server (CacheService and grpc.health.v1) with its shared state. Its
 * shutdown first ends the open WatchSettings streams (the edges reconnect to another replica),
 * then drains the calls in flight, then stops polling Redis.
 */
export function createServer(deps: CacheDependencies): CacheApp {
  const state = new CacheState(deps.redis, { prefix: deps.prefix, intervalMs: deps.reloadIntervalMs, logger: deps.logger });
  let bounded = 0;
  const metrics = createCacheMetrics(deps.registry, {
    redisUp: () => (deps.cacheRedis.status === 'ready' ? 1 : 0),
    redisBounded: () => bounded,
  });
  const service = createCacheService({
    state,
    entries: new EntryStore(deps.cacheRedis, state, { prefix: deps.prefix, maxEntryBytes: deps.maxEntryBytes }),
    // auth trims the trail by its own retention; the cache only adds to it.
    admin: new CacheAdmin(state, {
      logger: deps.logger,
      ...(deps.auditPrefix && { audit: new AuditLog(deps.redis, { prefix: deps.auditPrefix, trims: false }) }),
    }),
    metrics,
  });
  const server = createGatewayServer(
    [{ name: 'gateway.cache.v1.CacheService', definition: loadGatewayGrpc().gateway.cache.v1.CacheService.service, handlers: service.handlers }],
    connectionAgeOptions(deps.connectionAge),
  );
  let boundsTimer: NodeJS.Timeout | undefined;
  const checkBounded = async () => {
    boundsTimer ??= setInterval(() => void checkBounded(), BOUNDS_INTERVAL_MS).unref();
    const servers = await readMemoryOfMasters(deps.cacheRedis).catch(() => undefined);
    if (!servers) return;
    const unbounded = servers.filter((server) => !server.maxBytes || !server.policy || server.policy === NO_EVICTION);
    bounded = unbounded.length === 0 ? 1 : 0;
    if (unbounded.length > 0)
      deps.logger.error(
        { servers: unbounded.map(({ node, policy, maxBytes }) => ({ node, policy, maxBytes })) },
        "the cache's Redis (CACHE_REDIS_URL) is not bounded: set maxmemory and maxmemory-policy allkeys-lru, or it fills up and refuses entries",
      );
  };
  return {
    state,
    checkBounded,
    server: withShutdownSteps(server, {
      before: () => service.endWatches(),
      after: () => {
        state.stop();
        clearInterval(boundsTimer);
      },
    }),
  };
}
