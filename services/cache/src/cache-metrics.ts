import { metric, type prometheus, serviceMetrics } from '@gateway/observability';

/** What the cache's gauges read at each scrape. */
export interface CacheReadings {
  /** 1 while the entries' Redis is connected. */
  redisUp(): number;
  /** 1 when the entries' Redis is bounded (maxmemory set, an evicting policy), as read at start and each minute. */
  redisBounded(): number;
}

/** The cache's metrics; every label is bounded (results, reasons). */
export function createCacheMetrics(registry: prometheus.Registry | undefined, readings: CacheReadings) {
  // biome-ignore format: one metric a line, a table of name, help and the label each is counted by
  return serviceMetrics(registry, {
    lookups: metric.counterBy('gateway_cache_lookups_total', "Lookup calls answered, by result (hit, miss, error: the entries' Redis did not answer).", 'result', ['hit', 'miss', 'error']),
    stores: metric.counterBy('gateway_cache_stores_total', 'Store calls answered, by result (stored, too_large, error).', 'result', ['stored', 'too_large', 'error']),
    storedBytes: metric.counter('gateway_cache_stored_bytes_total', 'Bytes of the entries stored.'),
    purges: metric.counterBy('gateway_cache_purges_total', 'Purges applied, by what they covered (all, team, key, model).', 'kind'),
    targets: metric.gauge('gateway_cache_settings_targets', 'Targets with settings, as last read.'),
    watchers: metric.gauge('gateway_cache_watchers', "Edges watching this replica's settings."),
    redisUp: metric.gauge('gateway_cache_redis_up', "1 while the entries' Redis (CACHE_REDIS_URL) is connected, else 0.", readings.redisUp),
    redisBounded: metric.gauge('gateway_cache_redis_bounded', "1 when the entries' Redis has a maxmemory and an evicting policy, else 0 (it would fill up).", readings.redisBounded),
  });
}

/** The cache's metrics, as createCacheMetrics registers them. */
export type CacheMetrics = ReturnType<typeof createCacheMetrics>;
