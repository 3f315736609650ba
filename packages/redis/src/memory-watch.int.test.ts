/**
 * The watch that tells auth a Redis master is full, against servers of the test's own: a server
 * over its maxmemory with noeviction is full for every key, and has room again once maxmemory is
 * raised; one that may evict is never full (it makes room); on a cluster only the keys of the
 * full master's slots are.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { hasRedisServer } from '@gateway/testing';
import { RedisMemoryWatch } from './index.js';
import { useRedisServers } from './testing/redis-servers.js';

const logger = createLogger('memory-watch-test', 'silent');
const servers = useRedisServers();

describe.skipIf(!hasRedisServer())('RedisMemoryWatch', () => {
  it('says a server over its maxmemory with noeviction is full, and has room once maxmemory is raised', async () => {
    const { redis: server, client } = await servers.server(['--maxmemory-policy', 'noeviction']);
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
    const { cluster, client } = await servers.cluster();
    const keys = Array.from({ length: 30 }, (_, index) => `auth:record:{key_${index}}`);
    const full = cluster.masterOf(keys[0]!);
    full.cli('CONFIG', 'SET', 'maxmemory', '1');
    const watch = new RedisMemoryWatch(client, { logger });
    await watch.read();
    for (const key of keys) expect(watch.isFullFor(key), key).toBe(cluster.masterOf(key).port === full.port);
    expect(keys.some((key) => !watch.isFullFor(key))).toBe(true);
  });
});
