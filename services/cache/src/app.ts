/**
 * The cache wired from its dependencies: the shared state, the entries, the semantic index and
 * its tail of the cache's Redis, the admin changes, the metrics and the gRPC server.
 */
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
import { SemanticCache } from './semantic-cache.js';
import { SemanticIndex } from './semantic-index.js';
import { SemanticTail } from './semantic-tail.js';

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
  /** CACHE_SEMANTIC_MAX_BYTES: the bound of this replica's semantic index (256 MiB unless given). */
  semanticMaxBytes?: number;
  connectionAge?: ConnectionAge;
}

/** The unstarted cache: its gRPC server, and its state to start beside it. */
export interface CacheApp {
  server: GatewayServer;
  state: CacheState;
  /**
   * The semantic index's tail of the cache's Redis: start() it beside the state (it resolves after
   * the first rebuild, or its failure: a cache's Redis down never holds the start back); the
   * server's shutdown stops it.
   */
  semantic: SemanticTail;
  /** Reads whether the entries' Redis is bounded (gateway_cache_redis_bounded), logging an error when not. */
  checkBounded(): Promise<void>;
}

/** How often the entries' Redis's bounds are read again. */
const BOUNDS_INTERVAL_MS = 60_000;
/** The semantic index's bound when the dependencies name none (CACHE_SEMANTIC_MAX_BYTES's default). */
const SEMANTIC_MAX_BYTES = 256 * 1024 * 1024;

/**
 * The cache's unstarted gRPC server (CacheService and grpc.health.v1) with its shared state. Its
 * shutdown first ends the open WatchSettings streams (the edges reconnect to another replica),
 * then drains the calls in flight, then stops polling Redis and tailing the semantic stream.
 */
export function createServer(deps: CacheDependencies): CacheApp {
  const state = new CacheState(deps.redis, { prefix: deps.prefix, intervalMs: deps.reloadIntervalMs, logger: deps.logger });
  let bounded = 0;
  const index = new SemanticIndex({ maxBytes: deps.semanticMaxBytes ?? SEMANTIC_MAX_BYTES });
  const tail = new SemanticTail(deps.cacheRedis, index, { prefix: deps.prefix, logger: deps.logger });
  const metrics = createCacheMetrics(deps.registry, {
    redisUp: () => (deps.cacheRedis.status === 'ready' ? 1 : 0),
    redisBounded: () => bounded,
    semantic: () => ({ vectors: index.vectors, bytes: index.bytes, annGroups: index.annGroups }),
    semanticDropped: () => index.dropped,
    semanticRebuilds: () => tail.rebuilds,
  });
  const entries = new EntryStore(deps.cacheRedis, state, { prefix: deps.prefix, maxEntryBytes: deps.maxEntryBytes });
  const service = createCacheService({
    state,
    entries,
    semantic: new SemanticCache(deps.cacheRedis, entries, index, deps.prefix),
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
    semantic: tail,
    checkBounded,
    server: withShutdownSteps(server, {
      before: () => service.endWatches(),
      after: async () => {
        state.stop();
        clearInterval(boundsTimer);
        await tail.stop();
      },
    }),
  };
}
