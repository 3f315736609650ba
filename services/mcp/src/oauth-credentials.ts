/**
 * The per-key OAuth credentials of `auth: oauth` upstream servers (@gateway/mcp-oauth), from the
 * service's configuration. Tokens are sealed under MCP_CREDENTIALS_KEY; when it is empty, under a
 * key derived from MCP_SECRETS_KEY (HKDF-SHA256, its own label), so that a deployment with one
 * secret gets both without reusing the headers' key as it is. Either way the key must be the same
 * on every replica, and changing it makes every user authorize again.
 */
import { hkdfSync } from 'node:crypto';
import { credentialsKeyFromBase64, UpstreamCredentials } from '@gateway/mcp-oauth';
import type { RedisClient } from '@gateway/redis';
import type { McpConfig } from './config.js';

/** The HKDF label of the credentials key derived from MCP_SECRETS_KEY. */
const DERIVED_KEY_INFO = 'gateway mcp-oauth credentials v1';

/** The 32-byte key sealing OAuth tokens, or undefined when neither variable is set. */
export function credentialsKeyOf(config: Pick<McpConfig, 'MCP_CREDENTIALS_KEY' | 'MCP_SECRETS_KEY'>): Buffer | undefined {
  if (config.MCP_CREDENTIALS_KEY) return credentialsKeyFromBase64(config.MCP_CREDENTIALS_KEY, 'MCP_CREDENTIALS_KEY');
  if (!config.MCP_SECRETS_KEY) return undefined;
  const secrets = credentialsKeyFromBase64(config.MCP_SECRETS_KEY, 'MCP_SECRETS_KEY');
  return Buffer.from(hkdfSync('sha256', secrets, Buffer.alloc(0), DERIVED_KEY_INFO, 32));
}

/**
 * The credentials, or undefined (OAuth servers then answer that the gateway does not offer it)
 * when MCP_OAUTH_REDIRECT_URL or every key is missing. Their Redis keys are under
 * `<MCP_REDIS_PREFIX>oauth:`.
 */
export function createOAuthCredentials(
  config: Pick<McpConfig, 'MCP_CREDENTIALS_KEY' | 'MCP_SECRETS_KEY' | 'MCP_OAUTH_REDIRECT_URL' | 'MCP_REDIS_PREFIX'>,
  redis: RedisClient,
): UpstreamCredentials | undefined {
  const encryptionKey = credentialsKeyOf(config);
  if (!encryptionKey || !config.MCP_OAUTH_REDIRECT_URL) return undefined;
  return new UpstreamCredentials({ redis, prefix: `${config.MCP_REDIS_PREFIX}oauth:`, encryptionKey, redirectUri: config.MCP_OAUTH_REDIRECT_URL });
}
