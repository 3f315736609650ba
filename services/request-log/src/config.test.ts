import { DEFAULT_CATALOG_PATH } from '@gateway/catalog';
import { ConfigError, serviceEnvExampleProblems } from '@gateway/config';
import { describe, expect, it } from 'vitest';
import { loadRequestLogConfig, RequestLogConfigSchema } from './config.js';

const DATABASE_URL = 'postgres://gateway@127.0.0.1:5432/gateway';

describe('request-log configuration', () => {
  it('has working defaults once DATABASE_URL is set', () => {
    expect(loadRequestLogConfig({ DATABASE_URL })).toEqual({
      REQUEST_LOG_LISTEN_ADDR: '0.0.0.0:50055',
      REQUEST_LOG_METRICS_PORT: 9105,
      DATABASE_URL,
      REQUEST_LOG_DATABASE_POOL_SIZE: 10,
      REQUEST_LOG_DATABASE_SSLMODE: '',
      REQUEST_LOG_DATABASE_CA_FILE: '',
      REQUEST_LOG_DATABASE_PROBE_INTERVAL_MS: 1_000,
      NATS_URL: 'nats://127.0.0.1:4222',
      CATALOG_PATH: DEFAULT_CATALOG_PATH,
      CONFIG_RELOAD_INTERVAL_MS: 2_000,
      GRPC_MAX_CONNECTION_AGE_MS: 120_000,
      GRPC_MAX_CONNECTION_AGE_GRACE_MS: 1_800_000,
      REQUEST_LOG_RETENTION_DAYS: 30,
      REQUEST_LOG_BODY_RETENTION_DAYS: 7,
      REQUEST_LOG_BODY_STREAM_MAX_BYTES: 268_435_456,
      REQUEST_LOG_PARTITIONS_AHEAD_DAYS: 3,
      REQUEST_LOG_MAINTENANCE_INTERVAL_MS: 3_600_000,
      REQUEST_LOG_BATCH_ROWS: 500,
      REQUEST_LOG_BATCH_DELAY_MS: 100,
      LOG_LEVEL: 'info',
      REQUEST_LOG_SHUTDOWN_GRACE_MS: 5_000,
      USAGE_STREAM: 'USAGE',
      USAGE_STREAM_REPLICAS: 1,
      USAGE_STREAM_MAX_AGE_HOURS: 72,
      USAGE_STREAM_MAX_BYTES: 1_073_741_824,
    });
  });

  // Each invalid environment and the exact error it must produce.
  const invalid: Array<[Record<string, string>, string]> = [
    [{}, "invalid configuration: env must have required property 'DATABASE_URL'"],
    [{ DATABASE_URL: 'mysql://127.0.0.1/gateway' }, 'invalid configuration: env/DATABASE_URL must match pattern "^postgres(ql)?://"'],
    [{ DATABASE_URL, REQUEST_LOG_RETENTION_DAYS: '0' }, 'invalid configuration: env/REQUEST_LOG_RETENTION_DAYS must be >= 1'],
    [{ DATABASE_URL, REQUEST_LOG_BATCH_ROWS: '5000' }, 'invalid configuration: env/REQUEST_LOG_BATCH_ROWS must be <= 2000'],
    [{ DATABASE_URL, REQUEST_LOG_DATABASE_POOL_SIZE: '1' }, 'invalid configuration: env/REQUEST_LOG_DATABASE_POOL_SIZE must be >= 2'],
    [{ DATABASE_URL, REQUEST_LOG_MAINTENANCE_INTERVAL_MS: '10' }, 'invalid configuration: env/REQUEST_LOG_MAINTENANCE_INTERVAL_MS must be >= 1000'],
    [
      { DATABASE_URL, REQUEST_LOG_DATABASE_SSLMODE: 'allow' },
      'invalid configuration: env/REQUEST_LOG_DATABASE_SSLMODE must match pattern "^(|disable|prefer|require|verify-ca|verify-full)$"',
    ],
    [{ DATABASE_URL, REQUEST_LOG_DATABASE_PROBE_INTERVAL_MS: '10' }, 'invalid configuration: env/REQUEST_LOG_DATABASE_PROBE_INTERVAL_MS must be >= 100'],
    [{ DATABASE_URL, NATS_URL: '127.0.0.1:4222' }, 'invalid configuration: env/NATS_URL must match pattern "^(nats|tls)://"'],
  ];

  it.each(invalid)('rejects %o', (env, message) => {
    expect(() => loadRequestLogConfig(env)).toThrow(new ConfigError(message));
  });
});

describe('.env.example', () => {
  it("lists every variable the service reads, here and in the repository's, and nothing it does not", () => {
    expect(serviceEnvExampleProblems(RequestLogConfigSchema, new URL('..', import.meta.url))).toEqual([]);
  });
});
