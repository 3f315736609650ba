/** Redis servers and clusters a test file starts for itself, each with a client, undone after the file's tests. */
import { type RedisCluster, type RedisServer, startRedisCluster, startRedisServer } from '@gateway/testing';
import { afterAll } from 'vitest';
import { connectRedis, type RedisClient } from '../client.js';

/** Starts servers and clusters for the file's tests; after them disconnects each client and stops each server, the last first. */
export function useRedisServers() {
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  return {
    /** A server started with these command-line options, and a client of it. */
    async server(options: string[]): Promise<{ redis: RedisServer; client: RedisClient }> {
      const redis = await startRedisServer(options);
      cleanups.push(() => redis.stop());
      const client = connectRedis(redis.url);
      cleanups.push(() => client.disconnect());
      return { redis, client };
    },
    /** A cluster of three masters without replicas, and a client of it once it is ready (it has learnt the slots). */
    async cluster(): Promise<{ cluster: RedisCluster; client: RedisClient }> {
      const cluster = await startRedisCluster({ masters: 3, replicas: 0 });
      cleanups.push(() => cluster.stop());
      const client = connectRedis(cluster.url);
      cleanups.push(() => client.disconnect());
      if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
      return { cluster, client };
    },
  };
}
