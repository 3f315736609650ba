/**
 * The cache's metrics: its lookups (exact and semantic) and stores, the purges, the settings and
 * their watchers, the entries' Redis, and the semantic index of this replica.
 */
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';

/** What the cache's gauges read at each scrape. */
export interface CacheReadings {
  /** 1 while the entries' Redis is connected. */
  redisUp(): number;
  /** 1 when the entries' Redis is bounded (maxmemory set, an evicting policy), as read at start and each minute. */
  redisBounded(): number;
  /** What this replica's semantic index holds now. */
  semantic(): { vectors: number; bytes: number; annGroups: number };
  /** The vectors the semantic index dropped since start, by reason. */
  semanticDropped(): Record<'bound' | 'expired' | 'gone', number>;
  /** The semantic index's rebuilds since start (every vector key read again). */
  semanticRebuilds(): number;
}

/** The cache's metrics; every label is bounded (results, reasons). */
export function createCacheMetrics(registry: prometheus.Registry | undefined, readings: CacheReadings) {
  // biome-ignore format: one metric a line, a table of name, help and the label each is counted by
  return serviceMetrics(registry, {
    lookups: metric.counterBy('gateway_cache_lookups_total', "Exact Lookup calls answered, by result (hit, miss, error: the entries' Redis did not answer).", 'result', ['hit', 'miss', 'error']),
    semanticLookups: metric.counterBy('gateway_cache_semantic_lookups_total', "Semantic Lookup calls answered, by result (hit, miss, error: the entries' Redis did not answer, or a malformed semantic key).", 'result', ['hit', 'miss', 'error']),
    stores: metric.counterBy('gateway_cache_stores_total', 'Store calls answered, by result (stored, too_large, error).', 'result', ['stored', 'too_large', 'error']),
    storedBytes: metric.counter('gateway_cache_stored_bytes_total', 'Bytes of the entries stored.'),
    purges: metric.counterBy('gateway_cache_purges_total', 'Purges applied, by what they covered (all, team, key, model).', 'kind'),
    targets: metric.gauge('gateway_cache_settings_targets', 'Targets with settings, as last read.'),
    watchers: metric.gauge('gateway_cache_watchers', "Edges watching this replica's settings."),
    redisUp: metric.gauge('gateway_cache_redis_up', "1 while the entries' Redis (CACHE_REDIS_URL) is connected, else 0.", readings.redisUp),
    redisBounded: metric.gauge('gateway_cache_redis_bounded', "1 when the entries' Redis has a maxmemory and an evicting policy, else 0 (it would fill up).", readings.redisBounded),
    semanticVectors: metric.gauge('gateway_cache_semantic_vectors', "Kept questions' vectors this replica's semantic index holds.", () => readings.semantic().vectors),
    semanticBytes: metric.gauge('gateway_cache_semantic_bytes', "Bytes this replica's semantic index holds, as estimated (bounded by CACHE_SEMANTIC_MAX_BYTES).", () => readings.semantic().bytes),
    semanticAnnGroups: metric.gauge('gateway_cache_semantic_ann_groups', 'Groups of kept questions searched through an HNSW index (usearch) rather than by brute force.', () => readings.semantic().annGroups),
    semanticDropped: metric.countByReason('gateway_cache_semantic_dropped_total', 'Vectors the semantic index dropped, by reason (bound: the oldest past CACHE_SEMANTIC_MAX_BYTES; expired; gone: evicted from Redis).', ['bound', 'expired', 'gone'], readings.semanticDropped),
    semanticRebuilds: metric.count('gateway_cache_semantic_rebuilds_total', "Times the semantic index read every vector in the cache's Redis again (at start, after an outage, after missed announcements).", readings.semanticRebuilds),
  });
}

/** The cache's metrics, as createCacheMetrics registers them. */
export type CacheMetrics = ReturnType<typeof createCacheMetrics>;
