/**
 * Redis's memory as metering exports it, from a Redis server of the test's own: used_memory and
 * maxmemory as they change, its maxmemory-policy, and no value at all (read_success 0) while the server cannot be read,
 * so an alert never sees a stale figure; once it is back, the figures are too.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import { createRedis, type RedisClient } from '@gateway/redis';
import { eventually, hasRedisServer, type RedisServer, startRedisServer } from '@gateway/testing';
import { type RedisMemoryGauges, startRedisMemoryGauges } from './redis-memory-gauges.js';

const logger = createLogger('redis-memory-test', 'silent');
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A gauge's series on the registry's page, by their labels. */
async function series(registry: prometheus.Registry, name: string): Promise<string[]> {
  const text = await registry.getSingleMetricAsString(name);
  return text.split('\n').filter((line) => line.startsWith(`${name}{`));
}

describe.skipIf(!hasRedisServer())("metering's Redis memory gauges", () => {
  it('report used and max memory, nothing while Redis cannot be read, and again once it can', async () => {
    const server: RedisServer = await startRedisServer(['--maxmemory', '64mb', '--maxmemory-policy', 'noeviction']);
    cleanups.push(() => server.stop());
    const redis: RedisClient = createRedis(server.url, logger);
    cleanups.push(() => redis.disconnect());
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
    const registry = new prometheus.Registry();
    const gauges: RedisMemoryGauges = startRedisMemoryGauges({ clients: { state: redis }, registry, logger, intervalMs: 60_000 });
    cleanups.push(() => gauges.stop());
    await gauges.sample();
    const node = `127.0.0.1:${server.port}`;
    expect(await series(registry, 'gateway_redis_memory_max_bytes')).toEqual([
      `gateway_redis_memory_max_bytes{redis="state",node="${node}"} ${64 * 1024 * 1024}`,
    ]);
    const used = Number((await series(registry, 'gateway_redis_memory_used_bytes'))[0]?.split(' ')[1]);
    expect(used).toBeGreaterThan(0);
    expect(await series(registry, 'gateway_redis_memory_read_success')).toEqual(['gateway_redis_memory_read_success{redis="state"} 1']);
    expect(await series(registry, 'gateway_redis_maxmemory_policy')).toEqual([
      `gateway_redis_maxmemory_policy{redis="state",node="${node}",policy="noeviction"} 1`,
    ]);
    // A policy changed behind the gateway's back shows at the next read, under its new name only.
    server.cli('CONFIG', 'SET', 'maxmemory-policy', 'volatile-lru');
    await gauges.sample();
    expect(await series(registry, 'gateway_redis_maxmemory_policy')).toEqual([
      `gateway_redis_maxmemory_policy{redis="state",node="${node}",policy="volatile-lru"} 1`,
    ]);

    // 4 MiB more in Redis: used memory follows.
    await redis.set('filler', 'x'.repeat(4 * 1024 * 1024));
    await gauges.sample();
    expect(Number((await series(registry, 'gateway_redis_memory_used_bytes'))[0]?.split(' ')[1])).toBeGreaterThan(used + 4_000_000);

    // Redis stopped: no figure at all, and the failed read says so.
    await server.stop();
    await gauges.sample();
    expect(await series(registry, 'gateway_redis_memory_used_bytes')).toEqual([]);
    expect(await series(registry, 'gateway_redis_memory_max_bytes')).toEqual([]);
    expect(await series(registry, 'gateway_redis_maxmemory_policy')).toEqual([]);
    expect(await series(registry, 'gateway_redis_memory_read_success')).toEqual(['gateway_redis_memory_read_success{redis="state"} 0']);
  });

  it("report the responses' Redis beside the state Redis, each with its own maxmemory", async () => {
    const state = await startRedisServer(['--maxmemory', '32mb']);
    const responses = await startRedisServer(['--maxmemory', '16mb', '--maxmemory-policy', 'allkeys-lru']);
    cleanups.push(
      () => state.stop(),
      () => responses.stop(),
    );
    const stateClient = createRedis(state.url, logger);
    const responsesClient = createRedis(responses.url, logger);
    cleanups.push(
      () => stateClient.disconnect(),
      () => responsesClient.disconnect(),
    );
    const registry = new prometheus.Registry();
    const gauges = startRedisMemoryGauges({ clients: { state: stateClient, responses: responsesClient }, registry, logger, intervalMs: 60_000 });
    cleanups.push(() => gauges.stop());
    await eventually(
      async () => {
        await gauges.sample();
        return (await series(registry, 'gateway_redis_memory_max_bytes')).length === 2;
      },
      'both Redis servers to be read',
      10_000,
      50,
    );
    // The two are read side by side: their series come in either order.
    expect((await series(registry, 'gateway_redis_memory_max_bytes')).sort()).toEqual(
      [
        `gateway_redis_memory_max_bytes{redis="state",node="127.0.0.1:${state.port}"} ${32 * 1024 * 1024}`,
        `gateway_redis_memory_max_bytes{redis="responses",node="127.0.0.1:${responses.port}"} ${16 * 1024 * 1024}`,
      ].sort(),
    );
  });
});
