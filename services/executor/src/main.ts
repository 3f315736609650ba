/**
 * Runs the executor process: config, catalog, logger, metrics, listen, and on SIGTERM/SIGINT a
 * graceful shutdown (NOT_SERVING, no new calls, in-flight streams get EXECUTOR_SHUTDOWN_GRACE_MS
 * to finish, then the upstream pools and the metrics server close).
 */
import { loadCatalog } from '@gateway/catalog';
import { createLogger } from '@gateway/logger';
import { createRegistry, startMetricsServer } from '@gateway/observability';
import { createServer } from './app.js';
import { loadExecutorConfig } from './config.js';
import { UpstreamPools } from './providers/openai-compatible/upstream-pools.js';

const config = loadExecutorConfig(process.env);
const logger = createLogger('executor', config.LOG_LEVEL);
const catalog = loadCatalog(config.CATALOG_PATH);
const registry = createRegistry('executor');
const pools = new UpstreamPools({
  connectMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
  firstByteMs: config.UPSTREAM_FIRST_BYTE_TIMEOUT_MS,
  idleMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
});
let shuttingDown = false;
const server = createServer({ catalog, environment: process.env, logger, registry, pools });
const metrics = await startMetricsServer(registry, config.EXECUTOR_METRICS_PORT, '0.0.0.0', () => !shuttingDown);
const port = await server.listen(config.EXECUTOR_LISTEN_ADDR);
logger.info({ address: config.EXECUTOR_LISTEN_ADDR, port, metrics_port: metrics.port, catalog: config.CATALOG_PATH }, 'executor listening');

async function shutdown(signal: string): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  logger.info({ signal, grace_ms: config.EXECUTOR_SHUTDOWN_GRACE_MS }, 'executor shutting down');
  await server.shutdown(config.EXECUTOR_SHUTDOWN_GRACE_MS);
  await pools.close();
  await metrics.close();
  logger.info('executor stopped');
  process.exit(0);
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    shutdown(signal).catch((error: unknown) => {
      logger.error({ err: error }, 'executor shutdown failed');
      process.exit(1);
    });
  });
}
