import { parseCatalog } from '@gateway/catalog';
import { connectNats, stopConsumingService, usageStreamSettings } from '@gateway/messaging';
import { runService } from '@gateway/observability';
import { ExponentialBackoff, handleAll, retry } from 'cockatiel';
import pg from 'pg';
import { createServer } from './app.js';
import { loadRequestLogConfig } from './config.js';
import { databaseClientConfig, databaseFailure } from './database-connection.js';
import { migrate } from './migrations.js';

/** The request log: the catalog, PostgreSQL (its schema migrated first), the usage consumers and the gRPC server. */
await runService({
  name: 'request-log',
  config: loadRequestLogConfig,
  shutdown: (config) => ({ graceMs: config.REQUEST_LOG_SHUTDOWN_GRACE_MS }),
  async open({ config, logger, registry, open, metrics, reloadableFile }) {
    const catalogFile = open(reloadableFile({ path: config.CATALOG_PATH, name: 'catalog', parse: parseCatalog }).start(), (file) => file.close());
    const database = databaseClientConfig({
      url: config.DATABASE_URL,
      sslMode: config.REQUEST_LOG_DATABASE_SSLMODE || undefined,
      caFile: config.REQUEST_LOG_DATABASE_CA_FILE || undefined,
    });
    const pool = open(new pg.Pool({ ...database, max: config.REQUEST_LOG_DATABASE_POOL_SIZE, connectionTimeoutMillis: 5_000 }), (opened) => opened.end());
    // An idle connection PostgreSQL drops (a restart, a failover) is replaced at the next query.
    pool.on('error', (error) => logger.warn({ err: { message: error.message } }, 'an idle PostgreSQL connection failed'));
    // PostgreSQL may not answer yet (it starts beside the gateway, or fails over): the service waits
    // for it, retrying, rather than exiting; nothing is consumed before the schema is there.
    const migrations = retry(handleAll, { maxAttempts: Number.POSITIVE_INFINITY, backoff: new ExponentialBackoff({ initialDelay: 500, maxDelay: 10_000 }) });
    migrations.onRetry(({ delay, ...outcome }) => {
      const error = 'error' in outcome ? (outcome.error as Error & { code?: string }) : undefined;
      // Said as what it is (TLS, credentials, reachability): a certificate refused is no network problem.
      const { cause, summary } = databaseFailure(error);
      logger.warn(
        { cause, err: error && { message: error.message, code: error.code }, retry_in_ms: Math.round(delay) },
        `request log schema not migrated: ${summary}; retrying`,
      );
    });
    const applied = await migrations.execute(() => migrate(pool));
    logger.info({ applied }, 'request log schema migrated');
    const nc = await connectNats(config.NATS_URL, 'request-log', logger, registry);
    const requestLog = createServer({
      pool,
      nc,
      catalog: catalogFile,
      logger,
      registry,
      retentionDays: config.REQUEST_LOG_RETENTION_DAYS,
      bodyRetentionDays: config.REQUEST_LOG_BODY_RETENTION_DAYS,
      bodiesMaxBytes: config.REQUEST_LOG_BODY_STREAM_MAX_BYTES,
      aheadDays: config.REQUEST_LOG_PARTITIONS_AHEAD_DAYS,
      maintenanceIntervalMs: config.REQUEST_LOG_MAINTENANCE_INTERVAL_MS,
      batchRows: config.REQUEST_LOG_BATCH_ROWS,
      batchDelayMs: config.REQUEST_LOG_BATCH_DELAY_MS,
      databaseProbeIntervalMs: config.REQUEST_LOG_DATABASE_PROBE_INTERVAL_MS,
      ...usageStreamSettings(config),
      connectionAge: { maxAgeMs: config.GRPC_MAX_CONNECTION_AGE_MS, graceMs: config.GRPC_MAX_CONNECTION_AGE_GRACE_MS },
    });
    // Closed by the drain, after the consumers and NATS.
    const metricsServer = await metrics(config.REQUEST_LOG_METRICS_PORT);
    return {
      reportNotServing: () => requestLog.grpc.reportNotServing(),
      // The gRPC server, then the consumers, then NATS, then the metrics server.
      drain: () => stopConsumingService(requestLog, nc, config.REQUEST_LOG_SHUTDOWN_GRACE_MS, metricsServer),
      beforeListen: () => requestLog.start(),
      listen: () => requestLog.grpc.listen(config.REQUEST_LOG_LISTEN_ADDR),
      ready: () => !nc.isClosed(),
      listening: (port) => [{ address: config.REQUEST_LOG_LISTEN_ADDR, port, metrics_port: metricsServer.port }, 'request log running'],
    };
  },
});
