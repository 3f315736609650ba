import { runService, servedGrpc } from '@gateway/observability';
import { createServer } from './app.js';
import { loadGuardConfig } from './config.js';
import { openGuardDependencies } from './dependencies.js';

/**
 * The guard: Redis, the policies (read once Redis answers, then polled), the gRPC server; on
 * SIGTERM NOT_SERVING at once, serving on for GUARD_SHUTDOWN_DELAY_MS, then no new calls and
 * GUARD_SHUTDOWN_GRACE_MS for the checks in flight.
 */
await runService({
  name: 'guard',
  config: loadGuardConfig,
  shutdown: (config) => ({ graceMs: config.GUARD_SHUTDOWN_GRACE_MS, delayMs: config.GUARD_SHUTDOWN_DELAY_MS }),
  async open(context) {
    const { config } = context;
    const dependencies = openGuardDependencies(context);
    const { redis } = dependencies;
    const metricsServer = await context.openMetrics(config.GUARD_METRICS_PORT);
    const app = createServer(dependencies);
    return servedGrpc(app.server, {
      address: config.GUARD_LISTEN_ADDR,
      graceMs: config.GUARD_SHUTDOWN_GRACE_MS,
      // The policies are read once Redis answers (it may come up after this process), then polled.
      beforeListen: async () => {
        if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
        await app.store.start();
      },
      ready: () => redis.status === 'ready' && app.store.loaded,
      listening: (port) => [
        {
          address: config.GUARD_LISTEN_ADDR,
          port,
          metrics_port: metricsServer.port,
          policies: [...app.store.current.policies.keys()],
          secrets_key: config.GUARD_SECRETS_KEY !== '',
        },
        'guard listening',
      ],
    });
  },
});
