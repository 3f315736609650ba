/**
 * What the gateway keeps in Redis, against the figures docs/operations.md states ("What Redis holds"): a fixed record per API
 * key, a rate-limit entry per request for the one-minute window, and a de-duplication record per
 * usage event until metering's consumer has acknowledged it (plus the retention, here 0). Nothing
 * is kept per request for longer, and no key is named after a request.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, keysMatching, type RedisClient } from '@gateway/redis';
import { eventually } from '@gateway/testing';
import { meteredUsage, startCluster, type Cluster } from './cluster.js';

/** The bounds of the "What Redis holds" table in docs/operations.md, which this test holds. */
const MAX_BYTES_PER_KEY = 1_024;
const MAX_WINDOW_BYTES_PER_REQUEST = 600;
const MAX_DEDUP_BYTES_PER_EVENT = 200;

const REQUESTS = 300;

let cluster: Cluster;
let redis: RedisClient;

beforeAll(async () => {
  cluster = await startCluster({ plan: 'pro', env: { METERING_DEDUP_RETENTION_MS: '0' } });
  redis = connectRedis(cluster.redisUrl);
});

afterAll(async () => {
  await redis?.quit();
  await cluster?.stop();
});

/** Every key whose name contains `text`. */
async function keysContaining(text: string): Promise<string[]> {
  return keysMatching(redis, `*${text.replace(/[*?[\]\\]/g, '\\$&')}*`);
}

async function bytesOf(keys: readonly string[]): Promise<number> {
  let total = 0;
  for (const key of keys) total += Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) || 0;
  return total;
}

describe('Redis per request and per key', () => {
  it('holds a bounded record per key, a window entry per request of the last minute, and a usage record only until it is acknowledged', async () => {
    const requestIds: string[] = [];
    const send = async () => {
      const response = await fetch(`${cluster.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 8 }),
      });
      expect(response.status).toBe(200);
      requestIds.push(response.headers.get('x-request-id')!);
      await response.arrayBuffer();
    };
    for (let sent = 0; sent < REQUESTS; sent += 10) await Promise.all(Array.from({ length: 10 }, send));

    const usage = await eventually(
      async () => {
        const found = await meteredUsage(redis, cluster.apiKey);
        return found.requests === REQUESTS && found;
      },
      'every request to be metered',
      20_000,
    );
    expect(usage.requests).toBe(REQUESTS);

    const secretHash = createHash('sha256').update(cluster.apiKey).digest('hex');
    const keyId = (await redis.hget(`auth:key:${secretHash}`, 'key_id'))!;
    const windowKeys = (await keysContaining(`{${keyId}}`)).filter((key) => key.includes(':window:'));
    expect(windowKeys.length).toBeGreaterThan(0);
    // The secret's index, the key's record and its metering totals (over all and per model used).
    const totals = await keysContaining(`metering:key:{${keyId}}`);
    expect(totals.length).toBeGreaterThanOrEqual(2);
    const perKey = await bytesOf([`auth:key:${secretHash}`, `auth:record:{${keyId}}`, ...totals]);
    const windowBytes = await bytesOf(windowKeys);
    // The window's entries are per request, but settled and sharing structures; a key's window
    // with no request in it costs nothing (the keys expire with the window).
    process.stdout.write(`redis footprint: ${perKey} bytes per key, ${(windowBytes / REQUESTS).toFixed(0)} bytes per request in the window\n`);
    expect(perKey).toBeLessThanOrEqual(MAX_BYTES_PER_KEY);
    expect(windowBytes / REQUESTS).toBeLessThanOrEqual(MAX_WINDOW_BYTES_PER_REQUEST);

    // Usage records: one per event while unacknowledged, then pruned (retention 0 here).
    const dedup = `metering:dedup:{${keyId}}:${cluster.usageStream}`;
    const dedupSize = await redis.zcard(dedup);
    // Per record only where there are enough of them: one or two left unpruned carry the sorted
    // set's own fixed cost (several hundred bytes), not a record's.
    if (dedupSize >= 20) {
      process.stdout.write(`redis footprint: ${((await bytesOf([dedup])) / dedupSize).toFixed(0)} bytes per usage record (${dedupSize} held)\n`);
      expect((await bytesOf([dedup])) / dedupSize).toBeLessThanOrEqual(MAX_DEDUP_BYTES_PER_EVENT);
    }
    await eventually(async () => (await redis.zcard(dedup)) === 0, "the acknowledged events' records to be pruned", 30_000, 500);

    // Nothing is named after a request.
    for (const requestId of requestIds.slice(0, 20)) expect(await keysContaining(requestId)).toEqual([]);
  }, 120_000);
});
