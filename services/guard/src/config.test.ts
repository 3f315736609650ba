import { describe, expect, it } from 'vitest';
import { serviceEnvExampleProblems } from '@gateway/config';
import { GuardConfigSchema, loadGuardConfig } from './config.js';

describe('loadGuardConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadGuardConfig({})).toMatchObject({
      GUARD_LISTEN_ADDR: '0.0.0.0:50056',
      GUARD_METRICS_PORT: 9106,
      GUARD_REDIS_PREFIX: 'guard:',
      GUARD_SECRETS_KEY: '',
      GUARD_RELOAD_INTERVAL_MS: 250,
      GUARD_WINDOW_TOKENS: 64,
      GUARD_CHECK_DEADLINE_MS: 200,
    });
  });

  it('refuses a secrets key that is not 32 bytes of base64, naming the variable', () => {
    expect(() => loadGuardConfig({ GUARD_SECRETS_KEY: 'too-short' })).toThrow(/GUARD_SECRETS_KEY/);
    expect(loadGuardConfig({ GUARD_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') }).GUARD_SECRETS_KEY).toHaveLength(44);
  });

  it('is what .env.example lists', () => {
    expect(serviceEnvExampleProblems(GuardConfigSchema, new URL('..', import.meta.url))).toEqual([]);
  });
});
