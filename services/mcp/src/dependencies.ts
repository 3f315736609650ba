/**
 * The MCP service's dependencies: Redis (the upstream registry, client sessions, OAuth tokens),
 * tracing, and the settings of its server from the config, each resource opened with its close.
 */
import { connectionAgeOf } from '@gateway/grpc';
import type { RunContext } from '@gateway/observability';
import { closeRedis, createRedis } from '@gateway/redis';
import type { McpDependencies } from './app.js';
import type { McpConfig } from './config.js';
import { createOAuthCredentials } from './oauth-credentials.js';

/** Opens Redis and tracing; the OAuth credentials only when their variables are set. */
export function openMcpDependencies({ config, logger, registry, open, tracing }: RunContext<McpConfig>): McpDependencies {
  const redis = open(createRedis(config.REDIS_URL, logger), closeRedis);
  const credentials = createOAuthCredentials(config, redis);
  return {
    redis,
    logger,
    registry,
    prefix: config.MCP_REDIS_PREFIX,
    secretsKey: config.MCP_SECRETS_KEY,
    reloadIntervalMs: config.MCP_RELOAD_INTERVAL_MS,
    timeoutMs: config.MCP_TOOL_CALL_TIMEOUT_MS,
    maxResponseBytes: config.MCP_MAX_RESPONSE_BYTES,
    sessionTtlSeconds: config.MCP_SESSION_TTL_SECONDS,
    ...(credentials && { credentials }),
    connectionAge: connectionAgeOf(config),
    tracing: tracing(),
  };
}
