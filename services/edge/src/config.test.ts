import { describe, expect, it } from 'vitest';
import { ConfigError, serviceEnvExampleProblems } from '@gateway/config';
import { EdgeConfigSchema, readEdgeConfig } from './config.js';

describe('edge configuration', () => {
  it('refuses an admin token shorter than 32 characters, naming the variable', () => {
    expect(() => readEdgeConfig({ EDGE_ADMIN_TOKEN: 'short' })).toThrow(ConfigError);
    expect(() => readEdgeConfig({ EDGE_ADMIN_TOKEN: 'short' })).toThrow(/EDGE_ADMIN_TOKEN/);
    expect(readEdgeConfig({}).METERING_SERVICE_ADDR).toBe('127.0.0.1:50054');
  });
});

describe('.env.example', () => {
  it("lists every variable the service reads, here and in the repository's, and nothing it does not", () => {
    expect(serviceEnvExampleProblems(EdgeConfigSchema, new URL('..', import.meta.url))).toEqual([]);
  });
});
