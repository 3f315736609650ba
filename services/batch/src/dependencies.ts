/** The batch service's dependencies: its PostgreSQL pool (closed last), the cipher of the API keys, and its settings from the config. */
import type { RunContext } from '@gateway/observability';
import { SecretCipher } from '@gateway/redis';
import pg from 'pg';
import type { BatchDependencies } from './app.js';
import type { BatchConfig } from './config.js';
import { describeError } from './database.js';

/** Opens the pool; the rest comes from the config. */
export function openBatchDependencies({ config, logger, registry, open }: RunContext<BatchConfig>): BatchDependencies {
  const pool = open(new pg.Pool({ connectionString: config.DATABASE_URL, max: 10, connectionTimeoutMillis: 5_000 }), (opened) => opened.end());
  // An idle connection PostgreSQL drops (a restart, a failover) is replaced at the next query.
  pool.on('error', (error) => logger.warn({ err: describeError(error) }, 'an idle PostgreSQL connection failed'));
  return {
    pool,
    cipher: new SecretCipher(config.BATCH_SECRETS_KEY, 'BATCH_SECRETS_KEY'),
    logger,
    registry,
    edgeUrl: config.BATCH_EDGE_URL,
    laneConcurrency: config.BATCH_LANE_CONCURRENCY,
    lineAttempts: config.BATCH_LINE_ATTEMPTS,
    leaseMs: config.BATCH_LINE_LEASE_MS,
    pollIntervalMs: config.BATCH_POLL_INTERVAL_MS,
    maxFileBytes: config.BATCH_MAX_FILE_BYTES,
    maxLines: config.BATCH_MAX_LINES,
    maxFilesPerKey: config.BATCH_MAX_FILES_PER_KEY,
    maxBytesPerKey: config.BATCH_MAX_BYTES_PER_KEY,
  };
}
