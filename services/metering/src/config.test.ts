import { describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG_PATH } from '@gateway/catalog';
import { ConfigError, serviceEnvExampleProblems } from '@gateway/config';
import { loadMeteringConfig, MeteringConfigSchema } from './config.js';

describe('metering configuration', () => {
  it('has working defaults', () => {
    expect(loadMeteringConfig({})).toEqual({
      METERING_LISTEN_ADDR: '0.0.0.0:50054',
      METERING_METRICS_PORT: 9104,
      NATS_URL: 'nats://127.0.0.1:4222',
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_WAIT_REPLICAS: 0,
      REDIS_ALLOW_EVICTION: false,
      AUTH_REDIS_PREFIX: 'auth:',
      CATALOG_PATH: DEFAULT_CATALOG_PATH,
      CONFIG_RELOAD_INTERVAL_MS: 2_000,
      GRPC_MAX_CONNECTION_AGE_MS: 120_000,
      GRPC_MAX_CONNECTION_AGE_GRACE_MS: 1_800_000,
      METERING_UNKNOWN_MODEL_GRACE_MS: 300_000,
      LOG_LEVEL: 'info',
      METERING_SHUTDOWN_GRACE_MS: 5_000,
      USAGE_STREAM: 'USAGE',
      USAGE_STREAM_REPLICAS: 1,
      USAGE_STREAM_MAX_AGE_HOURS: 72,
      USAGE_STREAM_MAX_BYTES: 1_073_741_824,
      METERING_DEDUP_RETENTION_MS: 600_000,
      METERING_RESPONSES_TTL_SECONDS: 2_592_000,
      RESPONSES_REDIS_URL: '',
      METERING_RESPONSES_MAX_PER_KEY: 10_000,
      METERING_RESPONSES_MAX_BYTES_PER_KEY: 268_435_456,
      METERING_RESPONSES_MAX_TOTAL_BYTES: 2_147_483_648,
    });
  });

  // Each invalid environment and the exact error it must produce.
  const invalid: Array<[Record<string, string>, string]> = [
    [{ NATS_URL: '127.0.0.1:4222' }, 'invalid configuration: env/NATS_URL must match pattern "^(nats|tls)://"'],
    [{ REDIS_URL: 'http://127.0.0.1:6379' }, 'invalid configuration: env/REDIS_URL must match pattern "^rediss?(-cluster)?://"'],
    [{ AUTH_REDIS_PREFIX: 'auth prefix' }, 'invalid configuration: env/AUTH_REDIS_PREFIX must match pattern "^[A-Za-z0-9:_-]*$"'],
    [{ METERING_METRICS_PORT: '70000' }, 'invalid configuration: env/METERING_METRICS_PORT must be <= 65535'],
    [{ CATALOG_PATH: '' }, 'invalid configuration: env/CATALOG_PATH must NOT have fewer than 1 characters'],
    [{ USAGE_STREAM: 'usage.v1' }, 'invalid configuration: env/USAGE_STREAM must match pattern "^[A-Za-z0-9_-]{1,32}$"'],
    [{ USAGE_STREAM_REPLICAS: '0' }, 'invalid configuration: env/USAGE_STREAM_REPLICAS must be >= 1'],
    [{ USAGE_STREAM_MAX_AGE_HOURS: '0' }, 'invalid configuration: env/USAGE_STREAM_MAX_AGE_HOURS must be >= 1'],
    [{ USAGE_STREAM_MAX_BYTES: '512' }, 'invalid configuration: env/USAGE_STREAM_MAX_BYTES must be >= 1024'],
    [{ USAGE_STREAM_MAX_BYTES: '1GB' }, 'invalid configuration: env/USAGE_STREAM_MAX_BYTES must be integer'],
    [{ METERING_RESPONSES_TTL_SECONDS: '0' }, 'invalid configuration: env/METERING_RESPONSES_TTL_SECONDS must be >= 1'],
    [{ RESPONSES_REDIS_URL: 'http://127.0.0.1:6380' }, 'invalid configuration: env/RESPONSES_REDIS_URL must match pattern "(^rediss?(-cluster)?://)|^$"'],
    [{ METERING_RESPONSES_MAX_TOTAL_BYTES: '-1' }, 'invalid configuration: env/METERING_RESPONSES_MAX_TOTAL_BYTES must be >= 0'],
    [{ REDIS_ALLOW_EVICTION: 'maybe' }, 'invalid configuration: env/REDIS_ALLOW_EVICTION must be boolean'],
    [{ CONFIG_RELOAD_INTERVAL_MS: '-1' }, 'invalid configuration: env/CONFIG_RELOAD_INTERVAL_MS must be >= 0'],
  ];
  it('takes a NATS cluster as a list of servers and its replica count', () => {
    expect(loadMeteringConfig({ NATS_URL: 'nats://nats-0:4222,nats://nats-1:4222,nats://nats-2:4222', USAGE_STREAM_REPLICAS: '3' })).toMatchObject({
      NATS_URL: 'nats://nats-0:4222,nats://nats-1:4222,nats://nats-2:4222',
      USAGE_STREAM_REPLICAS: 3,
    });
  });

  it.each(invalid)('rejects %o', (env, message) => {
    expect(() => loadMeteringConfig(env)).toThrow(new ConfigError(message));
  });
});

describe('.env.example', () => {
  it("lists every variable the service reads, here and in the repository's, and nothing it does not", () => {
    expect(serviceEnvExampleProblems(MeteringConfigSchema, new URL('..', import.meta.url))).toEqual([]);
  });
});
