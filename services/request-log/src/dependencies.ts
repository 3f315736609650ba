/**
 * The request log's dependencies, each opened with its close: the catalog, PostgreSQL (its schema
 * migrated first, waited for while it does not answer) and NATS; the settings of its server from
 * the config.
 */
import { parseCatalog } from '@gateway/catalog';
import { connectionAgeOf } from '@gateway/grpc';
import { connectNats, usageStreamSettings } from '@gateway/messaging';
import type { RunContext } from '@gateway/observability';
import { ExponentialBackoff, handleAll, retry } from 'cockatiel';
import pg from 'pg';
import type { RequestLogDependencies } from './app.js';
import type { RequestLogConfig } from './config.js';
import { databaseClientConfig, databaseFailure } from './database-connection.js';
import { migrate } from './migrations.js';

/** Opens the request log's dependencies; nothing is consumed before the schema is there. */
export async function openRequestLogDependencies({
  config,
  logger,
  registry,
  open,
  reloadableFile,
}: RunContext<RequestLogConfig>): Promise<RequestLogDependencies> {
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
  // for it, retrying, rather than exiting.
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
  // Drained by the drain (stopConsumingService), after the consumers.
  const nc = await connectNats(config.NATS_URL, 'request-log', logger, registry);
  return {
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
    connectionAge: connectionAgeOf(config),
  };
}
