import { describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG_PATH, keyVariables, loadCatalog } from '@gateway/catalog';
import { serviceEnvExampleProblems } from '@gateway/config';
import { loadRouterConfig, RouterConfigSchema } from './config.js';

describe('loadRouterConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadRouterConfig({})).toEqual({
      ROUTER_LISTEN_ADDR: '0.0.0.0:50052',
      ROUTER_METRICS_PORT: 9102,
      ROUTER_SHUTDOWN_GRACE_MS: 10_000,
      CATALOG_PATH: DEFAULT_CATALOG_PATH,
      CONFIG_RELOAD_INTERVAL_MS: 2_000,
      GRPC_MAX_CONNECTION_AGE_MS: 120_000,
      GRPC_MAX_CONNECTION_AGE_GRACE_MS: 1_800_000,
      NATS_URL: 'nats://127.0.0.1:4222',
      DEPLOYMENT_HEALTH_SUBJECT: 'health.v1.deployment',
      LOG_LEVEL: 'info',
    });
  });

  it('reads and coerces the variables, ignoring unrelated ones', () => {
    const config = loadRouterConfig({
      ROUTER_LISTEN_ADDR: '127.0.0.1:6000',
      ROUTER_METRICS_PORT: '9999',
      CATALOG_PATH: '/etc/gateway/catalog.yaml',
      LOG_LEVEL: 'debug',
      OPENAI_API_KEY: 'sk-test',
    });
    expect(config).toMatchObject({
      ROUTER_LISTEN_ADDR: '127.0.0.1:6000',
      ROUTER_METRICS_PORT: 9999,
      CATALOG_PATH: '/etc/gateway/catalog.yaml',
      LOG_LEVEL: 'debug',
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(config).not.toHaveProperty('OPENAI_API_KEY');
  });

  it('fails naming a bad variable', () => {
    expect(() => loadRouterConfig({ ROUTER_METRICS_PORT: 'ninety' })).toThrow(/ROUTER_METRICS_PORT/);
    expect(() => loadRouterConfig({ LOG_LEVEL: 'loud' })).toThrow(/LOG_LEVEL/);
  });
});

describe('.env.example', () => {
  it("lists every variable the service reads, here and in the repository's, and nothing it does not", () => {
    // The shipped catalog's provider key variables are read too (the models they turn on).
    expect(serviceEnvExampleProblems(RouterConfigSchema, new URL('..', import.meta.url), keyVariables(loadCatalog()))).toEqual([]);
  });
});
