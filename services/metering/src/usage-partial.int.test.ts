/**
 * The usage API while a Redis shard does not answer (a master killed with no replica to take
 * over, on a Redis Cluster started here): a query over keys of several shards answers with the
 * usage of the shards that answer and names the keys it left out; a query of only such keys
 * fails as UNAVAILABLE (store_unavailable), never with a partial total that looks complete.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callUnary, createClient, createGatewayServer, GatewayError, type GatewayServer } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { loadGatewayGrpc, type QueryUsageRequest, type QueryUsageResponseOutput, type UsageServiceClient } from '@gateway/proto';
import { createRedis, type RedisClient } from '@gateway/redis';
import { hasRedisServer, startRedisCluster, type RedisCluster } from '@gateway/testing';
import { createUsageService } from './usage-service.js';
import { recordEvent } from './usage-store.js';

const logger = createLogger('usage-partial-test', 'silent');

function newKeyId(): string {
  return `key_${randomBytes(24)
    .toString('hex')
    .replace(/[^A-Za-z0-9]/g, '')
    .slice(0, 16)}`;
}

describe.skipIf(!hasRedisServer())('usage while a shard is down', () => {
  let cluster: RedisCluster;
  let redis: RedisClient;
  let server: GatewayServer;
  let client: UsageServiceClient;
  let storeErrors = 0;

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicas: 0 });
    redis = createRedis(cluster.url, logger);
    // It fails fast rather than queue: wait until it knows the cluster's slots.
    await new Promise((resolve) => redis.once('ready', resolve));
    const definition = loadGatewayGrpc().gateway.usage.v1.UsageService;
    server = createGatewayServer([
      {
        name: 'gateway.usage.v1.UsageService',
        definition: definition.service,
        handlers: createUsageService({ redis, logger, onStoreError: () => (storeErrors += 1) }),
      },
    ]);
    const port = await server.listen('127.0.0.1:0');
    client = createClient<UsageServiceClient>(definition, `127.0.0.1:${port}`);
  });

  afterAll(async () => {
    client?.close();
    await server?.shutdown(100);
    redis?.disconnect();
    await cluster?.stop();
  });

  const query = (keyIds: string[]) =>
    callUnary<QueryUsageRequest, QueryUsageResponseOutput>(
      client,
      client.QueryUsage,
      { start: Math.floor(Date.now() / 1000) - 3_600, end: Math.floor(Date.now() / 1000) + 3_600, bucket: 'BUCKET_WIDTH_HOUR', key_ids: keyIds },
      { deadlineMs: 5_000 },
    );

  it('answers from the shards that answer and names the keys it left out', async () => {
    // One key on each master.
    const byMaster = new Map<number, string>();
    while (byMaster.size < 3) {
      const keyId = newKeyId();
      byMaster.set(cluster.masterOf(`metering:key:{${keyId}}`).port, keyId);
    }
    const keys = [...byMaster.values()];
    let sequence = 0;
    for (const keyId of keys) {
      await recordEvent(redis, {
        stream: 'USAGE_PARTIAL',
        eventId: `evt-${keyId}`,
        sequence: (sequence += 1),
        usage: {
          key_id: keyId,
          model_id: 'sim-mini',
          prompt_tokens: 10,
          completion_tokens: 20,
          cached_tokens: 0,
          cost_pico_usd: 5_000_000n,
        },
      });
    }
    expect((await query(keys)).rows.map((row) => row.key_id).sort()).toEqual([...keys].sort());

    const [deadPort, deadKey] = [...byMaster][0]!;
    await cluster.masterOf(`metering:key:{${deadKey}}`).kill();
    expect(cluster.masterOf(`metering:key:{${keys[1]}}`).port).not.toBe(deadPort);
    const before = storeErrors;
    const partial = await query(keys);
    expect(partial.unavailable_key_ids).toEqual([deadKey]);
    expect(partial.rows.map((row) => row.key_id).sort()).toEqual(keys.filter((keyId) => keyId !== deadKey).sort());
    expect(partial.rows.every((row) => row.counts?.requests === 1)).toBe(true);
    expect(storeErrors).toBeGreaterThan(before);

    // Only the dead shard's key: nothing to answer with.
    const failure = await query([deadKey]).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(GatewayError);
    expect((failure as GatewayError).reason).toBe('store_unavailable');
  });
});
