/**
 * The request-log service for the integration tests: a NATS connection of its own, its usage stream
 * made (TEST_USAGE_STREAM_MAX_BYTES unless `maxBytes` says), wired with the settings they share (a
 * month kept, upkeep hourly, small quick batches, redeliveries a second apart), started, listening
 * on port 0 with a client of it; `stop` ends it, deletes its streams and drains the connection.
 */
import { createClient } from '@gateway/grpc';
import { bodiesNames, ensureUsageStream, refusedNames, toolCallNames } from '@gateway/messaging';
import { loadGatewayGrpc, type RequestLogServiceClient } from '@gateway/proto';
import { createTestDatabase, natsServers, natsUrl, TEST_USAGE_STREAM_MAX_BYTES, type TestDatabase } from '@gateway/testing';
import { connect, type NatsConnection } from 'nats';
import pg from 'pg';
import { createServer, type RequestLogDependencies, type RequestLogServer } from '../app.js';
import { migrate } from '../migrations.js';

/** A started request-log service, its NATS connection (for the tests' messages), a client of it, and its stop. */
export interface TestRequestLog {
  readonly server: RequestLogServer;
  readonly nc: NatsConnection;
  readonly client: RequestLogServiceClient;
  /** Closes the client, stops the service, deletes its usage, refused, bodies and tool-calls streams and drains its connection. */
  stop(): Promise<void>;
}

/** What a test must give: the rest defaults to the tests' shared settings. */
export type TestRequestLogDependencies = Omit<RequestLogDependencies, 'nc' | 'retentionDays' | 'maintenanceIntervalMs' | 'batchRows' | 'batchDelayMs'> &
  Partial<Omit<RequestLogDependencies, 'nc'>> & { stream: string };

/** Creates, starts and listens; see the file's comment. */
export async function startTestRequestLog(dependencies: TestRequestLogDependencies): Promise<TestRequestLog> {
  const { stream, subjects, maxBytes = TEST_USAGE_STREAM_MAX_BYTES } = dependencies;
  const nc = await connect({ servers: natsServers(await natsUrl()) });
  await ensureUsageStream(nc, { stream, subjects, maxBytes });
  const server = createServer({
    retentionDays: 30,
    maintenanceIntervalMs: 3_600_000,
    batchRows: 50,
    batchDelayMs: 20,
    backoffMs: [1_000, 1_000],
    ...dependencies,
    nc,
    maxBytes,
  });
  let port: number;
  try {
    await server.start();
    port = await server.grpc.listen('127.0.0.1:0');
  } catch (error) {
    // A start that failed half-way stops what it had started (a consumer retrying, the server).
    await server.grpc.shutdown(1_000).catch(() => undefined);
    await server.stop().catch(() => undefined);
    await nc.drain().catch(() => undefined);
    throw error;
  }
  const client: RequestLogServiceClient = createClient(loadGatewayGrpc().gateway.request_log.v1.RequestLogService, `127.0.0.1:${port}`);
  return {
    server,
    nc,
    client,
    stop: async () => {
      client.close();
      await server.grpc.shutdown(1_000);
      await server.stop();
      const manager = await nc.jetstreamManager();
      for (const name of [stream, refusedNames(stream).stream, bodiesNames(stream).stream, toolCallNames(stream).stream])
        await manager.streams.delete(name).catch(() => undefined);
      await nc.drain();
    },
  };
}

/** A database of the test's own with the request log's schema, the test's pool on it, and their end. */
export interface TestRequestLogDatabase {
  readonly database: TestDatabase;
  readonly pool: pg.Pool;
  /** Ends the pool, then drops the database. */
  drop(): Promise<void>;
}

/** Creates a database of the test's own, migrated through a pool of at most `max` connections. */
export async function createTestRequestLogDatabase(max: number): Promise<TestRequestLogDatabase> {
  const database = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: database.url, max });
  // Dropping the database at the end (or a test's outage) ends its connections: an error the pool
  // reports, not the test; the next query opens new ones.
  pool.on('error', () => undefined);
  await migrate(pool);
  return {
    database,
    pool,
    drop: async () => {
      await pool.end();
      await database.drop();
    },
  };
}
