/**
 * Runs the edge: reads config, opens long-lived channels to auth, router and executor, watches
 * the router's catalog, connects to NATS for usage events, listens, and shuts down gracefully.
 */
import { createClient, createHealthClient, isServing } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { UsagePublisher, connectNats, ensureUsageStream } from '@gateway/messaging';
import { createRegistry } from '@gateway/observability';
import { loadGatewayGrpc } from '@gateway/proto';
import { buildEdgeApp } from './app.js';
import { WatchedCatalog } from './catalog-view.js';
import { readEdgeConfig } from './config.js';

const config = readEdgeConfig(process.env);
const logger = createLogger('edge', config.LOG_LEVEL);
const registry = createRegistry('edge');
const grpc = loadGatewayGrpc().gateway;

const auth = createClient(grpc.auth.v1.AuthService, config.AUTH_SERVICE_ADDR);
const router = createClient(grpc.router.v1.RouterService, config.ROUTER_SERVICE_ADDR);
const executor = createClient(grpc.executor.v1.ExecutorService, config.EXECUTOR_SERVICE_ADDR);
const health = [config.AUTH_SERVICE_ADDR, config.ROUTER_SERVICE_ADDR, config.EXECUTOR_SERVICE_ADDR].map((address) => createHealthClient(address));

const catalog = new WatchedCatalog(router, logger);
catalog.start();

// NATS is not awaited: the edge serves while NATS is unreachable, and usage events queue until
// the first connection (then the stream is made sure of, so events never wait on metering).
const nats = connectNats(config.NATS_URL, 'edge', logger);
void nats.then((connection) => ensureUsageStream(connection)).catch((error: unknown) => logger.warn({ err: error }, 'usage stream not ensured'));
const usage = new UsagePublisher(nats, logger);

let shuttingDown = false;
let readyCache = { at: 0, value: false };
async function ready(): Promise<boolean> {
  if (shuttingDown) return false;
  if (Date.now() - readyCache.at < 1000) return readyCache.value;
  const answers = await Promise.all(health.map((client) => isServing(client, '', 1000)));
  readyCache = { at: Date.now(), value: catalog.ready && answers.every(Boolean) };
  return readyCache.value;
}

const app = await buildEdgeApp({ config, logger, registry, auth, router, executor, catalog, usage, ready });
await app.listen({ host: config.EDGE_HOST, port: config.EDGE_PORT });

async function shutdown(signal: string): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  logger.info({ signal }, 'shutting down');
  const timer = setTimeout(() => { logger.error('shutdown grace period over; exiting'); process.exit(1); }, config.EDGE_SHUTDOWN_GRACE_MS + 5000);
  timer.unref();
  await app.close();
  catalog.stop();
  await usage.flush(5000);
  await Promise.race([nats.then((connection) => connection.drain()), new Promise((resolve) => setTimeout(resolve, 2000))]).catch(() => undefined);
  for (const client of [auth, router, executor, ...health]) client.close();
  process.exit(0);
}
process.once('SIGTERM', () => void shutdown('SIGTERM'));
process.once('SIGINT', () => void shutdown('SIGINT'));
