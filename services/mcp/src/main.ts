import { runService, servedGrpc } from '@gateway/observability';
import { createServer } from './app.js';
import { loadMcpConfig } from './config.js';
import { openMcpDependencies } from './dependencies.js';

/**
 * The MCP service: Redis, the upstream registry (read once Redis answers, then polled), the gRPC
 * server; on SIGTERM NOT_SERVING at once, serving on for MCP_SHUTDOWN_DELAY_MS, then no new calls
 * and MCP_SHUTDOWN_GRACE_MS for the tool calls in flight.
 */
await runService({
  name: 'mcp',
  config: loadMcpConfig,
  shutdown: (config) => ({ graceMs: config.MCP_SHUTDOWN_GRACE_MS, delayMs: config.MCP_SHUTDOWN_DELAY_MS }),
  async open(context) {
    const { config } = context;
    const { redis, ...dependencies } = openMcpDependencies(context);
    const metricsServer = await context.openMetrics(config.MCP_METRICS_PORT);
    const app = createServer({ redis, ...dependencies });
    return servedGrpc(app.server, {
      address: config.MCP_LISTEN_ADDR,
      graceMs: config.MCP_SHUTDOWN_GRACE_MS,
      // The servers are read once Redis answers (it may come up after this process), then polled.
      beforeListen: async () => {
        if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
        await app.servers.start();
      },
      ready: () => redis.status === 'ready',
      listening: (port) => [
        {
          address: config.MCP_LISTEN_ADDR,
          port,
          metrics_port: metricsServer.port,
          servers: [...app.servers.current.keys()],
          oauth: dependencies.credentials !== undefined,
        },
        'mcp listening',
      ],
    });
  },
});
