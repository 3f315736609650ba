/** The cache's configuration: its defaults, the values it refuses, and its .env.example. */
import { describe, expect, it } from 'vitest';
import { ConfigError, serviceEnvExampleProblems } from '@gateway/config';
import { CacheConfigSchema, loadCacheConfig } from './config.js';

describe('cache configuration', () => {
  it('has working defaults', () => {
    expect(loadCacheConfig({})).toEqual({
      CACHE_LISTEN_ADDR: '0.0.0.0:50058',
      CACHE_METRICS_PORT: 9108,
      REDIS_URL: 'redis://127.0.0.1:6379',
      CACHE_REDIS_URL: 'redis://127.0.0.1:6380',
      CACHE_REDIS_PREFIX: 'cache:',
      CACHE_MAX_ENTRY_BYTES: 1_048_576,
      CACHE_SEMANTIC_MAX_BYTES: 268_435_456,
      CACHE_AUDIT_PREFIX: 'auth:',
      CACHE_RELOAD_INTERVAL_MS: 250,
      CACHE_SHUTDOWN_GRACE_MS: 5_000,
      CACHE_SHUTDOWN_DELAY_MS: 0,
      GRPC_MAX_CONNECTION_AGE_MS: 120_000,
      GRPC_MAX_CONNECTION_AGE_GRACE_MS: 1_800_000,
      LOG_LEVEL: 'info',
    });
  });

  // Each invalid environment and the exact error it must produce.
  const invalid: Array<[Record<string, string>, string]> = [
    [{ CACHE_REDIS_URL: 'http://127.0.0.1:6380' }, 'invalid configuration: env/CACHE_REDIS_URL must match pattern "^rediss?(-cluster)?://"'],
    [{ CACHE_SEMANTIC_MAX_BYTES: '1024' }, 'invalid configuration: env/CACHE_SEMANTIC_MAX_BYTES must be >= 1048576'],
    [{ CACHE_SEMANTIC_MAX_BYTES: '256MiB' }, 'invalid configuration: env/CACHE_SEMANTIC_MAX_BYTES must be integer'],
    [{ CACHE_MAX_ENTRY_BYTES: '100' }, 'invalid configuration: env/CACHE_MAX_ENTRY_BYTES must be >= 1024'],
  ];

  it.each(invalid)('rejects %o', (env, message) => {
    expect(() => loadCacheConfig(env)).toThrow(new ConfigError(message));
  });

  it('takes a semantic bound in bytes', () => {
    expect(loadCacheConfig({ CACHE_SEMANTIC_MAX_BYTES: '1073741824' }).CACHE_SEMANTIC_MAX_BYTES).toBe(1_073_741_824);
  });
});

describe('.env.example', () => {
  it("lists every variable the service reads, here and in the repository's, and nothing it does not", () => {
    expect(serviceEnvExampleProblems(CacheConfigSchema, new URL('..', import.meta.url))).toEqual([]);
  });
});
