import { describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG_PATH } from '@gateway/catalog';
import { loadExecutorConfig } from './config.js';

describe('loadExecutorConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadExecutorConfig({})).toEqual({
      EXECUTOR_LISTEN_ADDR: '0.0.0.0:50053',
      EXECUTOR_METRICS_PORT: 9103,
      CATALOG_PATH: DEFAULT_CATALOG_PATH,
      LOG_LEVEL: 'info',
      EXECUTOR_SHUTDOWN_GRACE_MS: 10_000,
      UPSTREAM_CONNECT_TIMEOUT_MS: 5_000,
      UPSTREAM_FIRST_BYTE_TIMEOUT_MS: 60_000,
      UPSTREAM_IDLE_TIMEOUT_MS: 60_000,
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
  });
});
