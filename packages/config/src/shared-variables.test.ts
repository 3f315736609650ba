import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';
import { mcpCredentialsVariables } from './shared-variables.js';

describe('mcpCredentialsVariables', () => {
  const schema = Type.Object(mcpCredentialsVariables());

  it('takes 32 bytes of base64 and a callback URL, and defaults both to empty (OAuth servers refused)', () => {
    const key = randomBytes(32).toString('base64');
    expect(loadConfig(schema, { MCP_CREDENTIALS_KEY: key, MCP_OAUTH_REDIRECT_URL: 'https://gateway.example.com/mcp/oauth/callback' })).toEqual({
      MCP_CREDENTIALS_KEY: key,
      MCP_OAUTH_REDIRECT_URL: 'https://gateway.example.com/mcp/oauth/callback',
    });
    expect(loadConfig(schema, {})).toEqual({ MCP_CREDENTIALS_KEY: '', MCP_OAUTH_REDIRECT_URL: '' });
  });

  it('names the variable that is wrong', () => {
    expect(() => loadConfig(schema, { MCP_CREDENTIALS_KEY: randomBytes(16).toString('base64') })).toThrow(ConfigError);
    expect(() => loadConfig(schema, { MCP_CREDENTIALS_KEY: randomBytes(16).toString('base64') })).toThrow(/MCP_CREDENTIALS_KEY/);
    expect(() => loadConfig(schema, { MCP_OAUTH_REDIRECT_URL: 'https://gateway.example.com/callback' })).toThrow(/MCP_OAUTH_REDIRECT_URL/);
  });
});
