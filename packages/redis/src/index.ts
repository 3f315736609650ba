/** The Redis client every service uses. */
import { Redis } from 'ioredis';
import type { Logger } from '@gateway/logger';

export { Redis } from 'ioredis';

/**
 * A Redis client that fails fast instead of queueing: while Redis is unreachable every command
 * rejects at once (no offline queue, one retry at most, a command timeout for a Redis that hangs),
 * so that auth answers UNAVAILABLE and metering leaves its message for redelivery within a fraction
 * of a second rather than hanging. It reconnects by itself, forever.
 */
export function createRedis(url: string, logger: Logger, options: { lazyConnect?: boolean; autoPipelining?: boolean } = {}): Redis {
  const redis = new Redis(url, {
    connectTimeout: 500,
    commandTimeout: 500,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: options.lazyConnect ?? false,
    // Commands issued in the same tick leave in one socket write (default). ioredis keeps one
    // such pipeline in flight per connection, so a command issued meanwhile waits for it: good for
    // throughput (metering writes a pulled batch at once), worse for the latency of single calls.
    enableAutoPipelining: options.autoPipelining ?? true,
    // Reconnect forever, quickly at first, at most every two seconds.
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
  let lastErrorLogAt = 0;
  redis.on('error', (error: Error) => {
    // ioredis emits an error per failed reconnect; one line every ten seconds is enough.
    const now = Date.now();
    if (now - lastErrorLogAt < 10_000) return;
    lastErrorLogAt = now;
    logger.warn({ err: { message: error.message } }, 'redis error');
  });
  redis.on('ready', () => logger.info('redis ready'));
  return redis;
}
