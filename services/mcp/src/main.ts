import { startMetricsServer, startTracing, startService } from '@gateway/observability';
import { createRedis } from '@gateway/redis';
import { createServer } from './app.js';
import { loadMcpConfig } from './config.js';
import { createOAuthCredentials } from './oauth-credentials.js';

/**
 * Runs the MCP service: config, Redis, the upstream registry (read now, then polled), the gRPC
 * server, metrics, and a graceful shutdown on SIGTERM or SIGINT: NOT_SERVING at once, serving on for
 * MCP_SHUTDOWN_DELAY_MS, then no new calls and MCP_SHUTDOWN_GRACE_MS for the tool calls in flight.
 */
async function main(): Promise<void> {
  const config = loadMcpConfig(process.env);
  // The shutdown exists before anything it closes: each resource registers its close as it opens
  // (the last opened closes first).
  const { logger, registry, lifecycle } = startService('mcp', config, { graceMs: config.MCP_SHUTDOWN_GRACE_MS, delayMs: config.MCP_SHUTDOWN_DELAY_MS });
  const redis = createRedis(config.REDIS_URL, logger);
  lifecycle.onStop(() => redis.quit().catch(() => redis.disconnect()));
  const tracing = startTracing('mcp');
  lifecycle.onStop(() => tracing.shutdown());
  // Ready once the gRPC server listens, until shutdown.
  let listening = false;
  const metrics = await startMetricsServer(
    registry,
    config.MCP_METRICS_PORT,
    '0.0.0.0',
    () => listening && !lifecycle.shuttingDown && redis.status === 'ready',
  );
  lifecycle.onStop(() => metrics.close());
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
  lifecycle.onSignal(() => app.server.reportNotServing());
  lifecycle.onStop(() => app.server.shutdown(config.MCP_SHUTDOWN_GRACE_MS));
  // The servers are read once Redis answers (it may come up after this process), then polled.
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  await app.servers.start();
  const port = await app.server.listen(config.MCP_LISTEN_ADDR);
  listening = true;
  logger.info(
    { address: config.MCP_LISTEN_ADDR, port, metrics_port: metrics.port, servers: [...app.servers.current.keys()], oauth: credentials !== undefined },
    'mcp listening',
  );
}

main().catch((error: unknown) => {
  // The logger may not exist yet (bad configuration), so the failure is one JSON line on stderr.
  process.stderr.write(
    `${JSON.stringify({ level: 'fatal', service: 'mcp', msg: 'mcp failed to start', error: error instanceof Error ? error.message : String(error) })}\n`,
  );
  process.exit(1);
});
