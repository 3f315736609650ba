/**
 * The watch that tells auth a Redis master is full, against servers of the test's own: a server
 * over its maxmemory with noeviction is full for every key, and has room again once maxmemory is
 * raised; one that may evict is never full (it makes room); on a cluster only the keys of the
 * full master's slots are.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { hasRedisServer, startRedisCluster, startRedisServer } from '@gateway/testing';
import { connectRedis, RedisMemoryWatch } from './index.js';

const logger = createLogger('memory-watch-test', 'silent');
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.skipIf(!hasRedisServer())('RedisMemoryWatch', () => {
  it('says a server over its maxmemory with noeviction is full, and has room once maxmemory is raised', async () => {
    const server = await startRedisServer(['--maxmemory-policy', 'noeviction']);
    cleanups.push(() => server.stop());
    const client = connectRedis(server.url);
    cleanups.push(() => client.disconnect());
    const watch = new RedisMemoryWatch(client, { logger });
    await watch.read();
    expect(watch.isFullFor('auth:record:{key_a}')).toBe(false);
    server.cli('CONFIG', 'SET', 'maxmemory', '1');
    await watch.read();
    expect(watch.isFullFor('auth:record:{key_a}')).toBe(true);
    // An evicting policy makes room rather than refusing: not full.
    server.cli('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
    await watch.read();
    expect(watch.isFullFor('auth:record:{key_a}')).toBe(false);
    server.cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    server.cli('CONFIG', 'SET', 'maxmemory', '0');
    await watch.read();
    expect(watch.isFullFor('auth:record:{key_a}')).toBe(false);
  });

  it("on a cluster, says full only for the keys of the full master's slots", async () => {
    const cluster = await startRedisCluster({ masters: 3, replicas: 0 });
    cleanups.push(() => cluster.stop());
    const client = connectRedis(cluster.url);
    cleanups.push(() => client.disconnect());
    if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
    const keys = Array.from({ length: 30 }, (_, index) => `auth:record:{key_${index}}`);
    const full = cluster.masterOf(keys[0]!);
    full.cli('CONFIG', 'SET', 'maxmemory', '1');
    const watch = new RedisMemoryWatch(client, { logger });
    await watch.read();
    for (const key of keys) expect(watch.isFullFor(key), key).toBe(cluster.masterOf(key).port === full.port);
    expect(keys.some((key) => !watch.isFullFor(key))).toBe(true);
  });
});
