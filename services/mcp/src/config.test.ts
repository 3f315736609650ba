import { describe, expect, it } from 'vitest';
import { serviceEnvExampleProblems } from '@gateway/config';
import { loadMcpConfig, McpConfigSchema } from './config.js';

describe('loadMcpConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadMcpConfig({})).toMatchObject({
      MCP_LISTEN_ADDR: '0.0.0.0:50057',
      MCP_METRICS_PORT: 9107,
      REDIS_URL: 'redis://127.0.0.1:6379',
      MCP_REDIS_PREFIX: 'mcp:',
      MCP_SECRETS_KEY: '',
      MCP_RELOAD_INTERVAL_MS: 500,
      MCP_TOOL_CALL_TIMEOUT_MS: 60_000,
      MCP_MAX_RESPONSE_BYTES: 4 * 1024 * 1024,
      MCP_SESSION_TTL_SECONDS: 86_400,
    });
  });

  it('refuses a secrets key that is not 32 bytes of base64, naming the variable', () => {
    expect(() => loadMcpConfig({ MCP_SECRETS_KEY: 'too-short' })).toThrow(/MCP_SECRETS_KEY/);
    expect(loadMcpConfig({ MCP_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') }).MCP_SECRETS_KEY).toHaveLength(44);
  });

  it('refuses an OAuth key or callback URL of the wrong shape, naming the variable', () => {
    expect(() => loadMcpConfig({ MCP_CREDENTIALS_KEY: 'not-a-key' })).toThrow(/MCP_CREDENTIALS_KEY/);
    expect(() => loadMcpConfig({ MCP_OAUTH_REDIRECT_URL: 'https://gateway.example.com/callback' })).toThrow(/MCP_OAUTH_REDIRECT_URL/);
    expect(loadMcpConfig({ MCP_OAUTH_REDIRECT_URL: 'https://gateway.example.com/mcp/oauth/callback' }).MCP_OAUTH_REDIRECT_URL).toBe(
      'https://gateway.example.com/mcp/oauth/callback',
    );
  });

  it('is what .env.example lists', () => {
    expect(serviceEnvExampleProblems(McpConfigSchema, new URL('..', import.meta.url))).toEqual([]);
  });
});
