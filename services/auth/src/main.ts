import { runService, servedGrpc } from '@gateway/observability';
import { createServer } from './app.js';
import { loadAuthConfig } from './config.js';
import { openAuthDependencies } from './dependencies.js';

/** Auth: the plans file, Redis (keys, teams, quota windows, admin tokens, audit) and the gRPC server. */
await runService({
  name: 'auth',
  config: loadAuthConfig,
  shutdown: (config) => ({ graceMs: config.AUTH_SHUTDOWN_GRACE_MS }),
  async open(context) {
    const { config } = context;
    const dependencies = await openAuthDependencies(context);
    const server = createServer(dependencies);
    const metricsServer = await context.openMetrics(config.AUTH_METRICS_PORT);
    return servedGrpc(server, {
      address: config.AUTH_LISTEN_ADDR,
      graceMs: config.AUTH_SHUTDOWN_GRACE_MS,
      ready: () => dependencies.redis.status === 'ready',
      listening: (port) => [{ address: config.AUTH_LISTEN_ADDR, port, metrics_port: metricsServer.port, plans_path: config.AUTH_PLANS_PATH }, 'auth listening'],
    });
  },
});
