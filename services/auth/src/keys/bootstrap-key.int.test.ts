import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { createRedis, parseRedisUrl } from '@gateway/redis';
import { eventually, redisUrl, startTcpProxy } from '@gateway/testing';
import { ensureBootstrapKeyOnceReachable } from './bootstrap-key.js';
import { generateSecret } from './key-secret.js';
import { KeyStore } from './key-store.js';
import { usePrefixedRedis } from '../testing/prefixed-redis.js';

const inspection = usePrefixedRedis();
const { prefix } = inspection;

describe('ensureBootstrapKeyOnceReachable', () => {
  // Through a TCP proxy to one server, closed while auth starts.
  it.skipIf(parseRedisUrl(process.env.REDIS_URL ?? 'redis://x').cluster)(
    'keeps trying while Redis is unreachable at start, and creates the key once it answers',
    async () => {
      const target = new URL(await redisUrl());
      const proxy = await startTcpProxy(0, target.hostname, Number(target.port));
      await proxy.close();
      const redis = createRedis(`redis://127.0.0.1:${proxy.port}`, createLogger('auth-test', 'silent'));
      const ownListeners = redis.listenerCount('ready');
      const warnings: Array<{ attempt: number; readyListeners: number }> = [];
      const logger = createLogger('auth-test', 'warn', {
        hooks: {
          logMethod(args) {
            const [fields, message] = args as unknown as [{ attempt: number }, string];
            if (message === 'bootstrap key not ensured yet; retrying') warnings.push({ attempt: fields.attempt, readyListeners: redis.listenerCount('ready') });
          },
        },
      });
      const secret = generateSecret();
      let reopened: Awaited<ReturnType<typeof startTcpProxy>> | undefined;
      try {
        const ensured = ensureBootstrapKeyOnceReachable(redis, new KeyStore(redis, { prefix }), secret, 'starter', logger);
        // The first attempt waits 2 s for the connection, then fails and is retried.
        await eventually(() => warnings.length > 0, 'the first attempt to fail', 5_000);
        reopened = await startTcpProxy(proxy.port, target.hostname, Number(target.port));
        const key = await ensured;
        expect(key).toMatchObject({ plan: 'starter', revoked: false });
        expect((await new KeyStore(inspection.redis, { prefix }).findBySecret(secret))?.key.key_id).toBe(key.key_id);
        expect(warnings.map((warning) => warning.attempt)).toEqual(warnings.map((_, index) => index + 1));
        // An attempt that gave up waiting for the connection leaves no listener behind.
        for (const warning of warnings) expect(warning.readyListeners).toBe(ownListeners);
      } finally {
        redis.disconnect();
        await reopened?.close();
      }
    },
    20_000,
  );
});
