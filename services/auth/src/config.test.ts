import { describe, expect, it } from 'vitest';
import { ConfigError, serviceEnvExampleProblems } from '@gateway/config';
import { loadAuthConfig, AuthConfigSchema } from './config.js';

describe('auth configuration', () => {
  it('has working defaults', () => {
    const config = loadAuthConfig({});
    expect(config).toMatchObject({
      AUTH_LISTEN_ADDR: '0.0.0.0:50051',
      AUTH_METRICS_PORT: 9101,
      REDIS_URL: 'redis://127.0.0.1:6379',
      GATEWAY_BOOTSTRAP_KEY: '',
      GATEWAY_BOOTSTRAP_PLAN: 'starter',
      LOG_LEVEL: 'info',
      AUTH_QUOTA_WINDOW_SECONDS: 60,
    });
    expect(config.AUTH_PLANS_PATH).toMatch(/services\/auth\/plans\.yaml$/);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('accepts a well-formed bootstrap key and plan', () => {
    const key = `br-${'a1B2'.repeat(10)}`;
    expect(loadAuthConfig({ GATEWAY_BOOTSTRAP_KEY: key, GATEWAY_BOOTSTRAP_PLAN: 'pro' })).toMatchObject({
      GATEWAY_BOOTSTRAP_KEY: key,
      GATEWAY_BOOTSTRAP_PLAN: 'pro',
    });
  });

  // Each invalid environment and the exact error it must produce; none echoes a secret.
  const invalid: Array<[Record<string, string>, string]> = [
    [{ GATEWAY_BOOTSTRAP_KEY: 'br-tooshort' }, 'invalid configuration: env/GATEWAY_BOOTSTRAP_KEY must match pattern "^(br-[A-Za-z0-9]{32,})?$"'],
    [{ GATEWAY_BOOTSTRAP_KEY: `sk-${'a'.repeat(40)}` }, 'invalid configuration: env/GATEWAY_BOOTSTRAP_KEY must match pattern "^(br-[A-Za-z0-9]{32,})?$"'],
    [{ GATEWAY_BOOTSTRAP_PLAN: 'gold' }, 'invalid configuration: env/GATEWAY_BOOTSTRAP_PLAN must be equal to one of the allowed values'],
    [{ AUTH_METRICS_PORT: 'ninety' }, 'invalid configuration: env/AUTH_METRICS_PORT must be integer'],
    [{ REDIS_URL: 'localhost:6379' }, 'invalid configuration: env/REDIS_URL must match pattern "^rediss?(-cluster)?://"'],
    [{ AUTH_QUOTA_WINDOW_SECONDS: '0' }, 'invalid configuration: env/AUTH_QUOTA_WINDOW_SECONDS must be >= 1'],
    [{ LOG_LEVEL: 'loud' }, 'invalid configuration: env/LOG_LEVEL must be equal to one of the allowed values'],
    [{ GRPC_MAX_CONNECTION_AGE_MS: '500' }, 'invalid configuration: env/GRPC_MAX_CONNECTION_AGE_MS must be >= 1000'],
  ];
  it.each(invalid)('rejects %o', (env, message) => {
    expect(() => loadAuthConfig(env)).toThrow(new ConfigError(message));
  });
});

describe('.env.example', () => {
  it("lists every variable the service reads, here and in the repository's, and nothing it does not", () => {
    expect(serviceEnvExampleProblems(AuthConfigSchema, new URL('..', import.meta.url))).toEqual([]);
  });
});
