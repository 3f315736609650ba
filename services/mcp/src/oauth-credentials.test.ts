import { describe, expect, it } from 'vitest';
import type { RedisClient } from '@gateway/redis';
import { credentialsKeyOf, createOAuthCredentials } from './oauth-credentials.js';

const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');
const CREDENTIALS_KEY = Buffer.alloc(32, 9).toString('base64');
const REDIRECT = 'https://gateway.example.com/mcp/oauth/callback';
/** The credentials only keep the client until they are used; these tests never use it. */
const redis = {} as RedisClient;

describe('credentialsKeyOf', () => {
  it('takes MCP_CREDENTIALS_KEY when it is set', () => {
    expect(credentialsKeyOf({ MCP_CREDENTIALS_KEY: CREDENTIALS_KEY, MCP_SECRETS_KEY: SECRETS_KEY })).toEqual(Buffer.from(CREDENTIALS_KEY, 'base64'));
  });

  it('derives a key of its own from MCP_SECRETS_KEY otherwise: the same on every replica, never the headers key itself', () => {
    const derived = credentialsKeyOf({ MCP_CREDENTIALS_KEY: '', MCP_SECRETS_KEY: SECRETS_KEY });
    expect(derived).toHaveLength(32);
    expect(derived).toEqual(credentialsKeyOf({ MCP_CREDENTIALS_KEY: '', MCP_SECRETS_KEY: SECRETS_KEY }));
    expect(derived).not.toEqual(Buffer.from(SECRETS_KEY, 'base64'));
    expect(derived).not.toEqual(credentialsKeyOf({ MCP_CREDENTIALS_KEY: '', MCP_SECRETS_KEY: CREDENTIALS_KEY }));
  });

  it('is none without either key', () => {
    expect(credentialsKeyOf({ MCP_CREDENTIALS_KEY: '', MCP_SECRETS_KEY: '' })).toBeUndefined();
  });
});

describe('createOAuthCredentials', () => {
  const base = { MCP_CREDENTIALS_KEY: CREDENTIALS_KEY, MCP_SECRETS_KEY: '', MCP_OAUTH_REDIRECT_URL: REDIRECT, MCP_REDIS_PREFIX: 'mcp:' };

  it('offers OAuth with a key and a callback URL', () => {
    expect(createOAuthCredentials(base, redis)).toBeDefined();
  });

  it('offers none without the callback URL or without any key', () => {
    expect(createOAuthCredentials({ ...base, MCP_OAUTH_REDIRECT_URL: '' }, redis)).toBeUndefined();
    expect(createOAuthCredentials({ ...base, MCP_CREDENTIALS_KEY: '' }, redis)).toBeUndefined();
  });
});
