import { runService, servedGrpc } from '@gateway/observability';
import { createServer } from './app.js';
import { loadCacheConfig } from './config.js';
import { openCacheDependencies } from './dependencies.js';

/**
 * The cache: its two Redis servers, the settings (read once REDIS_URL's answers, then polled), the
 * gRPC server, the semantic index read from the entries' Redis and then tailed; ready without the
 * entries' Redis (a cache that does not answer is a miss); on SIGTERM NOT_SERVING at once,
 * serving on for CACHE_SHUTDOWN_DELAY_MS, then no new calls and CACHE_SHUTDOWN_GRACE_MS for the
 * calls in flight.
 */
await runService({
  name: 'cache',
  config: loadCacheConfig,
  shutdown: (config) => ({ graceMs: config.CACHE_SHUTDOWN_GRACE_MS, delayMs: config.CACHE_SHUTDOWN_DELAY_MS }),
  async open(context) {
    const { config } = context;
    const dependencies = openCacheDependencies(context);
    const { redis } = dependencies;
    const metricsServer = await context.openMetrics(config.CACHE_METRICS_PORT);
    const app = createServer(dependencies);
    return servedGrpc(app.server, {
      address: config.CACHE_LISTEN_ADDR,
      graceMs: config.CACHE_SHUTDOWN_GRACE_MS,
      beforeListen: async () => {
        if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
        await app.state.start();
        await app.checkBounded();
        // The semantic index read from the cache's Redis before the first call (at most a few seconds).
        await app.semantic.start();
      },
      ready: () => redis.status === 'ready' && app.state.loaded,
      listening: (port) => [
        { address: config.CACHE_LISTEN_ADDR, port, metrics_port: metricsServer.port, targets: app.state.settings().length },
        'cache listening',
      ],
    });
  },
});
