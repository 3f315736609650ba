/**
 * Runs the edge: reads config, opens long-lived channels to auth (with decision streams on it),
 * router and executor, watches the router's catalog, connects to NATS for usage events, listens,
 * and shuts down gracefully.
 */
import { runService } from '@gateway/observability';
import { warmUpTokenizer } from '@gateway/tokens';
import { buildEdgeApp } from './app.js';
import { readEdgeConfig } from './config.js';
import { openEdgeDependencies } from './open-edge-dependencies.js';
import { ResponsesStore } from './wire/responses-store.js';

// On SIGTERM the edge reports not-ready and serves on for EDGE_SHUTDOWN_DELAY_MS, then stops
// accepting and lets in-flight requests finish; what it opened closes last-opened-first.
await runService({
  name: 'edge',
  config: readEdgeConfig,
  shutdown: (config) => ({ graceMs: config.EDGE_SHUTDOWN_GRACE_MS, delayMs: config.EDGE_SHUTDOWN_DELAY_MS }),
  async open(context) {
    const { config, logger, lifecycle } = context;
    // Metrics on a port of their own, never on the public API's; the last to close.
    await context.openMetrics(config.EDGE_METRICS_PORT, { host: config.EDGE_HOST, ready: () => !lifecycle.shuttingDown });
    const deps = openEdgeDependencies(context);
    warmUpTokenizer();
    // With EDGE_ADMIN_PORT the admin API and the console listen apart from the public API (which
    // answers 404 for them); without it, one app serves everything on EDGE_PORT.
    const app = await buildEdgeApp(deps, { surface: config.EDGE_ADMIN_PORT ? 'public' : 'both' });
    const admin = config.EDGE_ADMIN_PORT ? await buildEdgeApp(deps, { surface: 'admin' }) : undefined;
    return {
      drain: async () => {
        // fastify answers new requests 503 and lets in-flight ones finish.
        await Promise.all([app.close(), admin?.close()]);
        // Responses answered with `store: true` whose put is still on its way are kept before the channel closes.
        const unstored = await ResponsesStore.of(deps).flush(2_000);
        if (unstored > 0) logger.warn({ unstored }, 'responses still being stored at shutdown were given up');
      },
      listen: async () => {
        await app.listen({ host: config.EDGE_HOST, port: config.EDGE_PORT });
        await admin?.listen({ host: config.EDGE_HOST, port: config.EDGE_ADMIN_PORT });
        return config.EDGE_PORT;
      },
    };
  },
});
