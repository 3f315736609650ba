import { connectionAgeOptions, createGatewayServer, type ConnectionAge, type GatewayServer, withShutdownSteps } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { prometheus, Tracing } from '@gateway/observability';
import { loadGatewayGrpc } from '@gateway/proto';
import { type RedisClient, SecretCipher } from '@gateway/redis';
import { Aggregator } from './aggregator.js';
import { ClientSessions } from './client-sessions.js';
import { createMcpService } from './mcp-service.js';
import { ServerRegistry } from './server-registry.js';
import { NO_UPSTREAM_CREDENTIALS, type UpstreamCredentials } from './upstream-credentials.js';
import { UpstreamPool } from './upstream-pool.js';

/** What the MCP service is wired from; main.ts builds these, tests build their own. */
export interface McpDependencies {
  redis: RedisClient;
  logger: Logger;
  registry: prometheus.Registry;
  /** MCP_REDIS_PREFIX. */
  prefix: string;
  /** MCP_SECRETS_KEY: base64 of 32 bytes, or '' for none. */
  secretsKey: string;
  reloadIntervalMs: number;
  timeoutMs: number;
  maxResponseBytes: number;
  sessionTtlSeconds: number;
  /** Per-key credentials of `auth: oauth` servers; default none (such servers answer a JSON-RPC error). */
  credentials?: UpstreamCredentials;
  connectionAge?: ConnectionAge;
  /** Traces (OTLP), when configured; off by default. */
  tracing?: Tracing;
}

/** The unstarted service: its gRPC server, and the registry to start (and stop) beside it. */
export interface McpApp {
  server: GatewayServer;
  servers: ServerRegistry;
  pool: UpstreamPool;
}

/**
 * The MCP service's unstarted gRPC server (McpService and grpc.health.v1) with its upstream
 * registry and pool. Its shutdown first ends the open Listen streams, then drains unary calls
 * within the grace period, then closes the upstream sessions.
 */
export function createServer(deps: McpDependencies): McpApp {
  const servers = new ServerRegistry(deps.redis, new SecretCipher(deps.secretsKey, 'MCP_SECRETS_KEY'), {
    prefix: deps.prefix,
    intervalMs: deps.reloadIntervalMs,
    logger: deps.logger,
  });
  const credentials = deps.credentials ?? NO_UPSTREAM_CREDENTIALS;
  const pool = new UpstreamPool({ credentials, logger: deps.logger, timeoutMs: deps.timeoutMs });
  servers.onChange((current) => pool.sync(current));
  const sessions = new ClientSessions(deps.redis, { prefix: deps.prefix, ttlSeconds: deps.sessionTtlSeconds });
  const aggregator = new Aggregator({
    registry: servers,
    pool,
    sessions,
    logger: deps.logger,
    maxResponseBytes: deps.maxResponseBytes,
    timeoutMs: deps.timeoutMs,
  });
  const service = createMcpService({
    aggregator,
    registry: servers,
    pool,
    sessions,
    credentials,
    logger: deps.logger,
    metrics: deps.registry,
    tracing: deps.tracing,
  });
  const server = createGatewayServer(
    [{ name: 'gateway.mcp.v1.McpService', definition: loadGatewayGrpc().gateway.mcp.v1.McpService.service, handlers: service.handlers }],
    connectionAgeOptions(deps.connectionAge),
  );
  return {
    servers,
    pool,
    server: withShutdownSteps(server, {
      before: () => service.endListens(),
      after: async () => {
        servers.stop();
        await pool.closeAll();
      },
    }),
  };
}
