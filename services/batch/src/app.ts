/**
 * The batch service wired from its dependencies: the database watch, the lane, the metrics and the
 * gRPC server. start() migrates the schema (waiting for PostgreSQL, retrying, while it does not
 * answer) and starts the lane; stop() stops the lane (lines in flight finish within the grace, the
 * rest handed back) beside the server's own drain.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { createGatewayServer, type GatewayServer } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { prometheus } from '@gateway/observability';
import { loadGatewayGrpc } from '@gateway/proto';
import type { SecretCipher } from '@gateway/redis';
import type pg from 'pg';
import { createBatchMetrics } from './batch-metrics.js';
import { createBatchService } from './batch-service.js';
import { activeBatches } from './batch-store.js';
import { describeError, migrate, watchDatabase } from './database.js';
import { BatchLane } from './lane.js';

/** What the batch service is wired from; main.ts builds these from the config, tests build their own. */
export interface BatchDependencies {
  pool: pg.Pool;
  cipher: SecretCipher;
  logger: Logger;
  registry?: prometheus.Registry;
  /** BATCH_EDGE_URL. */
  edgeUrl: string;
  laneConcurrency: number;
  lineAttempts: number;
  leaseMs: number;
  pollIntervalMs: number;
  maxFileBytes: number;
  maxLines: number;
  maxFilesPerKey: number;
  maxBytesPerKey: number;
  /** The first backoff of a line sent again (1 s unless given). */
  retryBaseMs?: number;
  /** This replica's name on the lines it holds (the host name and a random suffix unless given). */
  replica?: string;
  /** Between two probes of PostgreSQL (2 s unless given). */
  probeIntervalMs?: number;
}

/** The unstarted batch service. */
export interface BatchApp {
  server: GatewayServer;
  lane: BatchLane;
  /** Whether the schema is migrated and PostgreSQL answers. */
  readonly ready: boolean;
  /** Migrates the schema (retrying while PostgreSQL does not answer), then starts the lane. */
  start(): Promise<void>;
  /** Stops the lane within `graceMs` (see BatchLane.stop) and the database watch. */
  stop(graceMs: number): Promise<void>;
}

/** The batch service's unstarted gRPC server (BatchService and grpc.health.v1), its lane and its readiness. */
export function createBatchApp(deps: BatchDependencies): BatchApp {
  const { pool, logger } = deps;
  const replica = deps.replica ?? `${hostname()}-${randomBytes(4).toString('hex')}`;
  const watch = watchDatabase(pool, { intervalMs: deps.probeIntervalMs ?? 2_000, logger });
  let migrated = false;
  let active = 0;
  const metrics = createBatchMetrics(deps.registry, {
    inFlight: () => lane.inFlight,
    activeBatches: async () => {
      if (migrated) active = await activeBatches(pool).catch(() => active);
      return active;
    },
    databaseUp: () => (migrated && watch.up ? 1 : 0),
  });
  const lane = new BatchLane({
    pool,
    cipher: deps.cipher,
    logger,
    watch,
    counters: { line: (result) => metrics.lines.inc({ result }) },
    replica,
    edgeUrl: deps.edgeUrl,
    concurrency: deps.laneConcurrency,
    attempts: deps.lineAttempts,
    leaseMs: deps.leaseMs,
    pollIntervalMs: deps.pollIntervalMs,
    retryBaseMs: deps.retryBaseMs,
  });
  const handlers = createBatchService({
    pool,
    logger,
    watch,
    cipher: deps.cipher,
    maxLines: deps.maxLines,
    maxFileBytes: deps.maxFileBytes,
    bounds: { maxFiles: deps.maxFilesPerKey, maxBytes: deps.maxBytesPerKey },
    onCreated: () => lane.wake(),
  });
  const server = createGatewayServer([
    { name: 'gateway.batch.v1.BatchService', definition: loadGatewayGrpc().gateway.batch.v1.BatchService.service, handlers },
  ]);
  let stopped = false;
  return {
    server,
    lane,
    get ready() {
      return migrated && watch.up;
    },
    async start() {
      // PostgreSQL may not answer yet (it starts beside the gateway, or fails over): wait for it.
      for (let delay = 500; !stopped; delay = Math.min(delay * 2, 10_000)) {
        try {
          const applied = await migrate(pool);
          logger.info({ applied }, 'batch schema migrated');
          break;
        } catch (error) {
          logger.warn({ err: describeError(error), retry_in_ms: delay }, 'batch schema not migrated; retrying');
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
      migrated = true;
      watch.answered();
      lane.start();
    },
    async stop(graceMs) {
      stopped = true;
      await lane.stop(graceMs);
      watch.close();
    },
  };
}
