/**
 * The migrations against a real PostgreSQL (a database of this run's own): replicas starting
 * together apply each migration once, and nothing outlives its transaction, so that a
 * transaction-pooling PgBouncer (which hands each transaction any server connection) can carry
 * them: no advisory lock is left on a connection once they are done, however long it stays open.
 */
import { createTestDatabase, type TestDatabase } from '@gateway/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maintainPartitions } from './partitions.js';
import { migrate, readMigrations } from './migrations.js';

let database: TestDatabase;
const pools: pg.Pool[] = [];
/** The server connections behind the transaction pooler. */
const serverConnections: pg.Client[] = [];

/**
 * PgBouncer's transaction pooling as a client sees it: each statement outside a transaction, and
 * each transaction whole (BEGIN to COMMIT or ROLLBACK), goes to the next of a few server
 * connections; a session's state (a session-level lock) stays on the connection it was made on.
 * The subset of pg.Pool the migrations and the partition upkeep use.
 */
function transactionPooler(connections: pg.Client[]): pg.Pool {
  let next = 0;
  const take = () => connections[next++ % connections.length]!;
  return {
    connect: async () => {
      let pinned: pg.Client | undefined;
      return {
        query: async (text: string, values?: unknown[]) => {
          const statement = text.trim().toUpperCase();
          if (statement === 'BEGIN') pinned = take();
          const connection = pinned ?? take();
          try {
            return await connection.query(text, values);
          } finally {
            if (statement === 'COMMIT' || statement === 'ROLLBACK') pinned = undefined;
          }
        },
        release: () => undefined,
      };
    },
    query: (text: string, values?: unknown[]) => take().query(text, values),
  } as unknown as pg.Pool;
}

beforeAll(async () => {
  database = await createTestDatabase('reqlog_migrations');
  for (let replica = 0; replica < 3; replica += 1) {
    const pool = new pg.Pool({ connectionString: database.url, max: 2 });
    pool.on('error', () => undefined);
    pools.push(pool);
  }
  for (let connection = 0; connection < 2; connection += 1) {
    const client = new pg.Client({ connectionString: database.url });
    client.on('error', () => undefined);
    await client.connect();
    serverConnections.push(client);
  }
}, 30_000);

afterAll(async () => {
  await Promise.all(serverConnections.map((client) => client.end().catch(() => undefined)));
  await Promise.all(pools.map((pool) => pool.end()));
  await database?.drop();
}, 30_000);

describe('request log migrations', () => {
  it('are applied once by replicas starting together, and leave no lock held on any connection', async () => {
    const applied = await Promise.all(pools.map((pool) => migrate(pool)));
    const versions = readMigrations().map((migration) => migration.version);
    expect(applied.flat().sort((a, b) => a - b)).toEqual(versions);
    const { rows } = await pools[0]!.query<{ version: number }>('SELECT version FROM request_log_migrations ORDER BY version');
    expect(rows.map((row) => row.version)).toEqual(versions);
    // The partition upkeep takes the same lock, the same way.
    await Promise.all(pools.map((pool) => maintainPartitions(pool, { nowMs: Date.now(), retentionDays: 30, aheadDays: 1 })));
    // Every pool keeps its connections open: a session-level lock would still be held by one.
    const locks = await pools[0]!.query<{ held: string }>(
      "SELECT count(*) AS held FROM pg_locks JOIN pg_database ON pg_database.oid = pg_locks.database WHERE locktype = 'advisory' AND datname = $1",
      [database.name],
    );
    expect(Number(locks.rows[0]!.held)).toBe(0);
    expect(pools.every((pool) => pool.totalCount > 0)).toBe(true);
  }, 60_000);

  it('run behind transaction pooling: one replica after another migrates and keeps its partitions', async () => {
    const pooler = transactionPooler(serverConnections);
    // Already migrated above: each start takes the lock, finds every migration applied, lets go.
    for (let start = 0; start < 4; start += 1) {
      expect(await migrate(pooler)).toEqual([]);
      await maintainPartitions(pooler, { nowMs: Date.now(), retentionDays: 30, aheadDays: 2 + start });
    }
    const locks = await serverConnections[0]!.query<{ held: string }>(
      "SELECT count(*) AS held FROM pg_locks JOIN pg_database ON pg_database.oid = pg_locks.database WHERE locktype = 'advisory' AND datname = $1",
      [database.name],
    );
    expect(Number(locks.rows[0]!.held)).toBe(0);
  }, 60_000);
});
