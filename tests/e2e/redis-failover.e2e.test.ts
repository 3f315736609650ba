/**
 * The gateway on a Redis Cluster (three masters with a replica each, started by the test), with
 * the master that holds the API key's data killed under load: its replica takes over, the gateway
 * follows it by itself, the key's limit holds within the requests in flight at the moment of the
 * failover, and every answered request is metered exactly once.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient } from '@gateway/redis';
import { eventually, hasRedisServer, startRedisCluster, type RedisCluster } from '@gateway/testing';
import { meteredUsage, startCluster, type Cluster } from './cluster.js';

/** Starter's requests per minute: the limit the drill runs into. */
const LIMIT = 60;
const CONCURRENCY = 8;

describe.skipIf(!hasRedisServer())('a Redis master failed over to its replica under load', () => {
  let redisCluster: RedisCluster;
  let gateway: Cluster;
  let redis: RedisClient;

  beforeAll(async () => {
    redisCluster = await startRedisCluster({ masters: 3, replicas: 1 });
    gateway = await startCluster({ plan: 'starter', env: { REDIS_URL: redisCluster.url, REDIS_WAIT_REPLICAS: '1' } });
    redis = connectRedis(redisCluster.url);
  });

  afterAll(async () => {
    redis?.disconnect();
    await gateway?.stop();
    await redisCluster?.stop();
  });

  it('keeps the limit within the requests in flight, answers every request, and meters each answered one once', async () => {
    const keyId = (await redis.hget(`auth:key:${createHash('sha256').update(gateway.apiKey).digest('hex')}`, 'key_id'))!;
    expect(keyId).toMatch(/^key_/);
    const master = redisCluster.masterOf(`auth:record:{${keyId}}`);

    let failedOver = false;
    let limitedAfterFailover = false;
    let stop = false;
    let answered = 0;
    const statuses = new Map<number, number>();
    const unavailableWithoutRetryAfter: number[] = [];
    const load = async () => {
      while (!stop) {
        const response = await fetch(`${gateway.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${gateway.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 5 }),
          signal: AbortSignal.timeout(10_000),
        });
        await response.arrayBuffer();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        if (response.status === 200) answered += 1;
        if (response.status === 503 && !response.headers.get('retry-after')) unavailableWithoutRetryAfter.push(response.status);
        if (response.status === 429 && failedOver) limitedAfterFailover = true;
        if (response.status === 429 && !failedOver) await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const loops = Array.from({ length: CONCURRENCY }, load);
    try {
      await eventually(() => answered >= LIMIT / 2, 'half the limit to be answered', 20_000, 10);
      await master.kill();
      await redisCluster.healthy(30_000);
      failedOver = true;
      // The key's slot has a new master; the gateway finds it and runs into the limit there.
      await eventually(() => limitedAfterFailover, 'the limit to be reached on the promoted replica', 30_000, 50);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    expect(redisCluster.masterOf(`auth:record:{${keyId}}`).port).not.toBe(master.port);
    process.stdout.write(`redis failover: ${answered} answered of a limit of ${LIMIT}; statuses ${JSON.stringify(Object.fromEntries(statuses))}\n`);

    // Every request got an answer a client can act on: served, limited, or 503 with Retry-After.
    expect([...statuses.keys()].every((status) => status === 200 || status === 429 || status === 503)).toBe(true);
    expect(unavailableWithoutRetryAfter).toEqual([]);
    // Reservations the master took but had not yet passed to its replica are forgotten: at most the
    // requests in flight when it died are let through beyond the limit. Reservations taken for
    // requests that were answered 503 (the reply lost with the master, or a retry that ran after
    // the caller's deadline) still count: the limit may be reached early, never late.
    expect(answered).toBeLessThanOrEqual(LIMIT + CONCURRENCY);
    expect(answered + (statuses.get(503) ?? 0)).toBeGreaterThanOrEqual(LIMIT);

    // Metering waited for the replica before acknowledging: nothing answered is lost or doubled.
    // An event that failed during the failover comes back after the consumer's backoff (5 s, then
    // 15 s, then 30 s).
    await eventually(async () => (await meteredUsage(redis, gateway.apiKey)).requests >= answered, 'every answered request to be metered', 90_000, 500);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await meteredUsage(redis, gateway.apiKey)).requests).toBe(answered);

    // The old master comes back as a replica of the new one.
    await master.start();
    await redisCluster.healthy(30_000);
    expect(master.cli('ROLE').split('\n')[0]).toBe('slave');
  }, 240_000);
});
