import { runService, startTracing } from '@gateway/observability';
import { createRedis } from '@gateway/redis';
import { createServer } from './app.js';
import { loadMcpConfig } from './config.js';
import { createOAuthCredentials } from './oauth-credentials.js';

/**
 * The MCP service: Redis, the upstream registry (read once Redis answers, then polled), the gRPC
 * server; on SIGTERM NOT_SERVING at once, serving on for MCP_SHUTDOWN_DELAY_MS, then no new calls
 * and MCP_SHUTDOWN_GRACE_MS for the tool calls in flight.
 */
await runService({
  name: 'mcp',
  config: loadMcpConfig,
  shutdown: (config) => ({ graceMs: config.MCP_SHUTDOWN_GRACE_MS, delayMs: config.MCP_SHUTDOWN_DELAY_MS }),
  async open({ config, logger, registry, open, metrics }) {
    const redis = open(createRedis(config.REDIS_URL, logger), (client) => client.quit().catch(() => client.disconnect()));
    const tracing = open(startTracing('mcp'), (opened) => opened.shutdown());
    const metricsServer = open(await metrics(config.MCP_METRICS_PORT), (server) => server.close());
    const credentials = createOAuthCredentials(config, redis);
    const app = createServer({
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
      connectionAge: { maxAgeMs: config.GRPC_MAX_CONNECTION_AGE_MS, graceMs: config.GRPC_MAX_CONNECTION_AGE_GRACE_MS },
      tracing,
    });
    return {
      reportNotServing: () => app.server.reportNotServing(),
      drain: () => app.server.shutdown(config.MCP_SHUTDOWN_GRACE_MS),
      // The servers are read once Redis answers (it may come up after this process), then polled.
      beforeListen: async () => {
        if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
        await app.servers.start();
      },
      listen: () => app.server.listen(config.MCP_LISTEN_ADDR),
      ready: () => redis.status === 'ready',
      listening: (port) => [
        { address: config.MCP_LISTEN_ADDR, port, metrics_port: metricsServer.port, servers: [...app.servers.current.keys()], oauth: credentials !== undefined },
        'mcp listening',
      ],
    };
  },
});
