import { onShutdownSignal, startMetricsServer, startTracing, startService } from '@gateway/observability';
import { createRedis } from '@gateway/redis';
import { createServer } from './app.js';
import { loadMcpConfig } from './config.js';
import { createOAuthCredentials } from './oauth-credentials.js';

/**
 * Runs the MCP service: config, Redis, the upstream registry (read now, then polled), the gRPC
 * server, metrics, and a graceful shutdown on SIGTERM or SIGINT.
 */
async function main(): Promise<void> {
  const config = loadMcpConfig(process.env);
  const { logger, registry } = startService('mcp', config);
  const redis = createRedis(config.REDIS_URL, logger);
  const tracing = startTracing('mcp');
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
  // The servers are read once Redis answers (it may come up after this process), then polled.
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  await app.servers.start();
  const port = await app.server.listen(config.MCP_LISTEN_ADDR);
  const metrics = await startMetricsServer(registry, config.MCP_METRICS_PORT, '0.0.0.0', () => !lifecycle.shuttingDown && redis.status === 'ready');
  logger.info(
    { address: config.MCP_LISTEN_ADDR, port, metrics_port: metrics.port, servers: [...app.servers.current.keys()], oauth: credentials !== undefined },
    'mcp listening',
  );
  const lifecycle = onShutdownSignal(logger, config.MCP_SHUTDOWN_GRACE_MS + 5_000, async () => {
    await app.server.shutdown(config.MCP_SHUTDOWN_GRACE_MS);
    await metrics.close();
    await tracing.shutdown();
    await redis.quit().catch(() => redis.disconnect());
  });
}

main().catch((error: unknown) => {
  // The logger may not exist yet (bad configuration), so the failure is one JSON line on stderr.
  process.stderr.write(
    `${JSON.stringify({ level: 'fatal', service: 'mcp', msg: 'mcp failed to start', error: error instanceof Error ? error.message : String(error) })}\n`,
  );
  process.exit(1);
});
