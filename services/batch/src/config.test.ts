/** The batch service's configuration: its defaults, the values it refuses, and its .env.example. */
import { describe, expect, it } from 'vitest';
import { ConfigError, serviceEnvExampleProblems } from '@gateway/config';
import { BatchConfigSchema, loadBatchConfig } from './config.js';

const REQUIRED = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/gateway', BATCH_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') };

describe('batch configuration', () => {
  it('has working defaults beside the two required variables', () => {
    expect(loadBatchConfig(REQUIRED)).toEqual({
      ...REQUIRED,
      BATCH_LISTEN_ADDR: '0.0.0.0:50059',
      BATCH_METRICS_PORT: 9109,
      BATCH_EDGE_URL: 'http://127.0.0.1:8080',
      BATCH_LANE_CONCURRENCY: 16,
      BATCH_LINE_ATTEMPTS: 5,
      BATCH_LINE_LEASE_MS: 60_000,
      BATCH_POLL_INTERVAL_MS: 200,
      BATCH_MAX_FILE_BYTES: 209_715_200,
      BATCH_MAX_LINES: 50_000,
      BATCH_MAX_FILES_PER_KEY: 1_000,
      BATCH_MAX_BYTES_PER_KEY: 10_737_418_240,
      BATCH_SHUTDOWN_GRACE_MS: 10_000,
      LOG_LEVEL: 'info',
    });
  });

  // Each invalid environment and the exact error it must produce.
  const invalid: Array<[Record<string, string>, string]> = [
    [{ BATCH_SECRETS_KEY: REQUIRED.BATCH_SECRETS_KEY }, 'invalid configuration: DATABASE_URL is required (postgres://user:password@host:5432/database)'],
    [{ DATABASE_URL: REQUIRED.DATABASE_URL }, 'invalid configuration: BATCH_SECRETS_KEY is required (32 random bytes in base64: openssl rand -base64 32)'],
    [{ ...REQUIRED, DATABASE_URL: 'mysql://db' }, 'invalid configuration: env/DATABASE_URL must match pattern "^(postgres(ql)?://.*)?$"'],
    [{ ...REQUIRED, BATCH_SECRETS_KEY: 'c2hvcnQ=' }, 'invalid configuration: env/BATCH_SECRETS_KEY must match pattern "^([A-Za-z0-9+/]{43}=)?$"'],
    [{ ...REQUIRED, BATCH_LANE_CONCURRENCY: '0' }, 'invalid configuration: env/BATCH_LANE_CONCURRENCY must be >= 1'],
  ];

  it.each(invalid)('rejects %o', (env, message) => {
    expect(() => loadBatchConfig(env)).toThrow(new ConfigError(message));
  });
});

describe('.env.example', () => {
  it("lists every variable the service reads, here and in the repository's, and nothing it does not", () => {
    expect(serviceEnvExampleProblems(BatchConfigSchema, new URL('..', import.meta.url))).toEqual([]);
  });
});
