import { describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG_PATH, keyVariables, loadCatalog } from '@gateway/catalog';
import { serviceEnvExampleProblems } from '@gateway/config';
import { loadExecutorConfig, ExecutorConfigSchema } from './config.js';

describe('loadExecutorConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadExecutorConfig({})).toEqual({
      EXECUTOR_LISTEN_ADDR: '0.0.0.0:50053',
      EXECUTOR_METRICS_PORT: 9103,
      CATALOG_PATH: DEFAULT_CATALOG_PATH,
      CONFIG_RELOAD_INTERVAL_MS: 2_000,
      GRPC_MAX_CONNECTION_AGE_MS: 120_000,
      GRPC_MAX_CONNECTION_AGE_GRACE_MS: 1_800_000,
      LOG_LEVEL: 'info',
      EXECUTOR_SHUTDOWN_GRACE_MS: 10_000,
      EXECUTOR_SHUTDOWN_DELAY_MS: 0,
      UPSTREAM_CONNECT_TIMEOUT_MS: 5_000,
      UPSTREAM_FIRST_BYTE_TIMEOUT_MS: 60_000,
      UPSTREAM_IDLE_TIMEOUT_MS: 60_000,
      UPSTREAM_MAX_CONNECTIONS: 1_024,
      NATS_URL: 'nats://127.0.0.1:4222',
      DEPLOYMENT_HEALTH_SUBJECT: 'health.v1.deployment',
      EXECUTOR_HEALTH_INTERVAL_MS: 2_000,
      EXECUTOR_RETRY_MAX_ATTEMPTS: 3,
      EXECUTOR_RETRY_BASE_DELAY_MS: 100,
      EXECUTOR_RETRY_MAX_DELAY_MS: 2_000,
      EXECUTOR_BREAKER_CONSECUTIVE_FAILURES: 5,
      EXECUTOR_BREAKER_ERROR_RATE: 0.5,
      EXECUTOR_BREAKER_WINDOW: 20,
      EXECUTOR_BREAKER_MINIMUM_CALLS: 10,
      EXECUTOR_BREAKER_OPEN_MS: 5_000,
      EXECUTOR_BREAKER_MAX_OPEN_MS: 60_000,
    });
  });

  it('coerces numbers, ignores unrelated variables and freezes the result', () => {
    const config = loadExecutorConfig({ UPSTREAM_IDLE_TIMEOUT_MS: '1500', OPENAI_API_KEY: 'sk-secret' });
    expect(config.UPSTREAM_IDLE_TIMEOUT_MS).toBe(1500);
    expect(config).not.toHaveProperty('OPENAI_API_KEY');
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('fails fast naming the bad variable', () => {
    expect(() => loadExecutorConfig({ UPSTREAM_CONNECT_TIMEOUT_MS: 'soon' })).toThrow(/UPSTREAM_CONNECT_TIMEOUT_MS/);
    expect(() => loadExecutorConfig({ EXECUTOR_METRICS_PORT: '70000' })).toThrow(/EXECUTOR_METRICS_PORT/);
    expect(() => loadExecutorConfig({ LOG_LEVEL: 'loud' })).toThrow(/LOG_LEVEL/);
    expect(() => loadExecutorConfig({ EXECUTOR_BREAKER_ERROR_RATE: '1' })).toThrow(/EXECUTOR_BREAKER_ERROR_RATE/);
  });
});

describe('.env.example', () => {
  it("lists every variable the service reads, here and in the repository's, and nothing it does not", () => {
    expect(serviceEnvExampleProblems(ExecutorConfigSchema, new URL('..', import.meta.url), keyVariables(loadCatalog()))).toEqual([]);
  });
});
