/**
 * Redis's memory as gauges, read every interval from each master of the state Redis (REDIS_URL)
 * and of the responses' Redis when it is another (RESPONSES_REDIS_URL): used_memory and maxmemory,
 * and maxmemory-policy, so that an alert fires before Redis is full or when the state Redis may
 * evict (deploy/components/alerts/redis-alerts.yaml). A
 * server that cannot be read has no value (its series is removed) rather than its last one, so
 * an alert never sees a stale figure; `gateway_redis_memory_read_success` says which.
 */
import type { Logger } from '@gateway/logger';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';
import { readMemoryOfMasters, type RedisClient } from '@gateway/redis';

/** How often Redis's memory is read unless configured otherwise: every 15 s, Prometheus's scrape interval. */
export const DEFAULT_REDIS_MEMORY_INTERVAL_MS = 15_000;

/** Options of startRedisMemoryGauges. */
export interface RedisMemoryGaugesOptions {
  /** Each Redis by its role (`state`, `responses`). */
  clients: Readonly<Record<string, RedisClient>>;
  registry?: prometheus.Registry;
  logger: Logger;
  intervalMs?: number;
}

/** Running gauges; `stop` ends the reads. */
export interface RedisMemoryGauges {
  /** One read of every Redis now (also what the interval runs). */
  sample(): Promise<void>;
  stop(): void;
}

/** Starts reading Redis's memory into gauges, at once and then every interval. */
export function startRedisMemoryGauges(options: RedisMemoryGaugesOptions): RedisMemoryGauges {
  // biome-ignore format: one metric a line, a table of name, help and labels
  const { used, max, policy, readable } = serviceMetrics(options.registry, {
    used: metric.gauge('gateway_redis_memory_used_bytes', "Redis's used_memory, by Redis (state: REDIS_URL; responses: RESPONSES_REDIS_URL) and master; absent while it cannot be read.", ['redis', 'node']),
    max: metric.gauge('gateway_redis_memory_max_bytes', "Redis's maxmemory (0: no limit), by Redis and master; absent while it cannot be read.", ['redis', 'node']),
    policy: metric.gauge('gateway_redis_maxmemory_policy', "1 for each Redis master's maxmemory-policy (the policy label), by Redis and master; absent while it cannot be read. The state Redis must say noeviction.", ['redis', 'node', 'policy']),
    readable: metric.gauge('gateway_redis_memory_read_success', "1 when the latest read of a Redis's memory (every master) succeeded, 0 when it failed, by Redis.", ['redis']),
  });
  // The nodes with series, by Redis: a node gone from a cluster loses its series.
  const nodes = new Map<string, Set<string>>();
  // The policy series of each node, by `<redis> <node>`.
  const policies = new Map<string, Set<string>>();
  // Drops the series of the nodes not kept, and every policy series (set again from the read, in
  // the same tick: a scrape never sees a node without its policy, nor a policy it no longer has).
  const forget = (redis: string, keep: Set<string>) => {
    for (const node of nodes.get(redis) ?? []) {
      for (const name of policies.get(`${redis} ${node}`) ?? []) policy.remove({ redis, node, policy: name });
      policies.delete(`${redis} ${node}`);
      if (keep.has(node)) continue;
      used.remove({ redis, node });
      max.remove({ redis, node });
    }
    nodes.set(redis, keep);
  };
  const sampleOne = async (redis: string, client: RedisClient) => {
    try {
      const memories = await readMemoryOfMasters(client);
      const seen = new Set<string>();
      for (const memory of memories) {
        if (memory.usedBytes === undefined || memory.maxBytes === undefined) continue;
        used.set({ redis, node: memory.node }, memory.usedBytes);
        max.set({ redis, node: memory.node }, memory.maxBytes);
        seen.add(memory.node);
      }
      forget(redis, seen);
      for (const memory of memories) {
        if (memory.policy === undefined || !seen.has(memory.node)) continue;
        policy.set({ redis, node: memory.node, policy: memory.policy }, 1);
        policies.set(`${redis} ${memory.node}`, new Set([memory.policy]));
      }
      readable.set({ redis }, memories.length > 0 && seen.size === memories.length ? 1 : 0);
    } catch (error) {
      forget(redis, new Set());
      readable.set({ redis }, 0);
      options.logger.debug({ err: { message: (error as Error).message }, redis }, "reading Redis's memory failed");
    }
  };
  const sample = async () => {
    await Promise.all(Object.entries(options.clients).map(([redis, client]) => sampleOne(redis, client)));
  };
  void sample();
  const timer = setInterval(() => void sample(), options.intervalMs ?? DEFAULT_REDIS_MEMORY_INTERVAL_MS);
  timer.unref();
  return { sample, stop: () => clearInterval(timer) };
}
