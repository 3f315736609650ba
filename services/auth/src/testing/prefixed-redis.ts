/** A test file's Redis connection and key prefix of its own, so files can run side by side on one Redis. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';

/** The connection (set before the file's first test) and the prefix of every key the file writes. */
export interface PrefixedRedis {
  readonly prefix: string;
  readonly redis: RedisClient;
  /** A second connection to the same Redis, as another replica of auth holds. */
  readonly other: RedisClient;
}

/** Connects before the file's tests; after them (and after the file's own afterAll) deletes every key under the prefix and quits. */
export function usePrefixedRedis(): PrefixedRedis {
  const scope = { prefix: `test-${randomUUID()}:auth:` } as { prefix: string; redis: RedisClient; other: RedisClient };
  beforeAll(async () => {
    const url = await redisUrl();
    scope.redis = connectRedis(url);
    scope.other = connectRedis(url);
  });
  afterAll(async () => {
    await deleteMatching(scope.redis, `${scope.prefix}*`);
    await Promise.all([scope.redis.quit(), scope.other.quit()]);
  });
  return scope;
}
