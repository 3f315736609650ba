/**
 * The policy check at start against Redis servers of the test's own (never the shared one's
 * configuration): an evicting policy is refused with a message naming the server, the setting and
 * the override, volatile-* too; noeviction passes; the override lets it start with a warning; a
 * server that disables CONFIG is still read through INFO, and one that tells neither is accepted
 * with a warning. On a cluster every master is read, and one evicting master is enough to refuse.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { hasRedisServer } from '@gateway/testing';
import { checkEvictionPolicy, EvictingRedisError } from './index.js';
import { useRedisServers } from './testing/redis-servers.js';

const servers = useRedisServers();

/** A logger that keeps what it warns. */
function recordingLogger() {
  const warnings: string[] = [];
  const logger = createLogger('eviction-policy-test', 'warn', {
    hooks: {
      logMethod(args) {
        warnings.push(String(args.find((arg) => typeof arg === 'string') ?? ''));
      },
    },
  });
  return { logger, warnings };
}

describe.skipIf(!hasRedisServer())('the maxmemory-policy check', () => {
  it('refuses allkeys-lru, naming the server, the setting and the override', async () => {
    const { redis, client } = await servers.server(['--maxmemory-policy', 'allkeys-lru']);
    const { logger } = recordingLogger();
    const refused = await checkEvictionPolicy(client, { allowEviction: false, logger }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EvictingRedisError);
    expect((refused as Error).message).toBe(
      `Redis at 127.0.0.1:${redis.port} has maxmemory-policy allkeys-lru: it may evict keys, which resets rate-limit windows, forgets API keys and budgets and meters usage twice. ` +
        "Set maxmemory-policy noeviction on it (redis.conf, CONFIG SET maxmemory-policy noeviction, or your provider's parameter group), or set REDIS_ALLOW_EVICTION=true to start anyway.",
    );
  });

  it('refuses volatile-ttl too (limit windows and de-duplication records have a time to live), and passes noeviction', async () => {
    const { redis, client } = await servers.server(['--maxmemory-policy', 'volatile-ttl']);
    const { logger, warnings } = recordingLogger();
    await expect(checkEvictionPolicy(client, { allowEviction: false, logger })).rejects.toThrow(/maxmemory-policy volatile-ttl/);
    redis.cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    expect(await checkEvictionPolicy(client, { allowEviction: false, logger })).toMatchObject([{ node: `127.0.0.1:${redis.port}`, policy: 'noeviction' }]);
    expect(warnings).toEqual([]);
  });

  it('lets an evicting Redis through with REDIS_ALLOW_EVICTION, warning', async () => {
    const { client } = await servers.server(['--maxmemory-policy', 'allkeys-lru']);
    const { logger, warnings } = recordingLogger();
    expect(await checkEvictionPolicy(client, { allowEviction: true, logger })).toMatchObject([{ policy: 'allkeys-lru' }]);
    expect(warnings).toEqual(['Redis may evict keys; starting anyway as REDIS_ALLOW_EVICTION is true']);
  });

  it('reads the policy through INFO where CONFIG is disabled (managed Redis)', async () => {
    const withoutConfig = await servers.server(['--maxmemory-policy', 'allkeys-random', '--rename-command', 'CONFIG', '']);
    const { logger, warnings } = recordingLogger();
    // Waited for: the guard checks a client that is connected, or once it connects.
    if (withoutConfig.client.status !== 'ready') await new Promise((resolve) => withoutConfig.client.once('ready', resolve));
    await expect(checkEvictionPolicy(withoutConfig.client, { allowEviction: false, logger })).rejects.toThrow(/maxmemory-policy allkeys-random/);
    expect(warnings).toEqual([]);
  });

  it('reads every master of a cluster and refuses when one of them may evict', async () => {
    const { cluster, client } = await servers.cluster();
    const { logger } = recordingLogger();
    expect((await checkEvictionPolicy(client, { allowEviction: false, logger })).map((memory) => memory.policy)).toEqual([
      'noeviction',
      'noeviction',
      'noeviction',
    ]);
    const evicting = cluster.nodes[2]!;
    evicting.cli('CONFIG', 'SET', 'maxmemory-policy', 'volatile-lru');
    await expect(checkEvictionPolicy(client, { allowEviction: false, logger })).rejects.toThrow(
      `Redis at ${evicting.address} has maxmemory-policy volatile-lru`,
    );
  });
});
