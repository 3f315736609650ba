/**
 * The request log behind a real PgBouncer in transaction pooling mode (startPgBouncer of
 * @gateway/testing, two server connections) in front of a real PostgreSQL: two writers migrating
 * at once are serialized by the schema's transaction-level advisory lock (each migration applied
 * once, none twice), a second start finds everything applied, the writer's rows go in through it
 * and SearchRequests reads them back through it.
 */
import { callUnary } from '@gateway/grpc';
import { encodeUsageEvent } from '@gateway/messaging';
import type { SearchRequestsRequest, SearchRequestsResponseOutput } from '@gateway/proto';
import { createTestDatabase, eventually, type PgBouncer, postgresUrl, startPgBouncer, type TestDatabase } from '@gateway/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Migration, migrate, readMigrations } from './migrations.js';
import { startTestRequestLog } from './testing/request-log-service.js';
import { completedUsageEvent, testRequestLogSetting } from './testing/request-log-setting.js';

let database: TestDatabase;
let bouncer: PgBouncer;
const pools: pg.Pool[] = [];

/** A writer's pool through PgBouncer, as the service makes it. */
function poolThroughBouncer(): pg.Pool {
  const pool = new pg.Pool({ connectionString: bouncer.url(database.name), max: 4, connectionTimeoutMillis: 5_000 });
  pool.on('error', () => undefined);
  pools.push(pool);
  return pool;
}

beforeAll(async () => {
  database = await createTestDatabase('reqlog_pgbouncer');
  bouncer = await startPgBouncer({ server: postgresUrl(), poolMode: 'transaction', poolSize: 2 });
}, 60_000);

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end().catch(() => undefined)));
  await bouncer?.close();
  await database?.drop();
}, 30_000);

describe('the request log behind PgBouncer in transaction mode', () => {
  it('is pooled per transaction (the admin console says so)', async () => {
    const admin = new pg.Client({ connectionString: bouncer.url('pgbouncer') });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ name: string; pool_mode: string }>('SHOW DATABASES');
      expect(rows.find((row) => row.name === '*')?.pool_mode ?? bouncer.settings.pool_mode).toBe('transaction');
      const config = await admin.query<{ key: string; value: string }>('SHOW CONFIG');
      expect(config.rows.find((row) => row.key === 'pool_mode')?.value).toBe('transaction');
    } finally {
      await admin.end();
    }
  }, 30_000);

  it('serializes two writers migrating at once: each migration applied once, and a second start applies none', async () => {
    const [first, second] = [poolThroughBouncer(), poolThroughBouncer()];
    // A slow first migration: without the lock both writers would find it unapplied and run it,
    // the second failing on the table the first created.
    const slow: Migration[] = [
      { version: 1, name: '001_probe.sql', sql: 'CREATE TABLE migration_probe (id integer PRIMARY KEY); SELECT pg_sleep(0.5);' },
      { version: 2, name: '002_probe.sql', sql: 'INSERT INTO migration_probe VALUES (1);' },
    ];
    const probeDatabase = await createTestDatabase('reqlog_pgbouncer_probe');
    try {
      const probePools = [0, 1].map(() => {
        const pool = new pg.Pool({ connectionString: bouncer.url(probeDatabase.name), max: 2 });
        pool.on('error', () => undefined);
        return pool;
      });
      try {
        const applied = await Promise.all(probePools.map((pool) => migrate(pool, slow)));
        expect(applied.flat().sort()).toEqual([1, 2]);
        const { rows } = await probePools[0]!.query<{ count: string }>('SELECT count(*) FROM migration_probe');
        expect(Number(rows[0]!.count)).toBe(1);
      } finally {
        await Promise.all(probePools.map((pool) => pool.end()));
      }
    } finally {
      await probeDatabase.drop();
    }
    // The request log's own migrations, from two writers at once, then again.
    const versions = readMigrations().map((migration) => migration.version);
    const applied = await Promise.all([migrate(first), migrate(second)]);
    expect(applied.flat().sort((a, b) => a - b)).toEqual(versions);
    expect(await Promise.all([migrate(first), migrate(second)])).toEqual([[], []]);
    // Nothing outlives its transaction: no advisory lock is left on a server connection.
    const locks = await first.query<{ held: string }>(
      "SELECT count(*) AS held FROM pg_locks JOIN pg_database ON pg_database.oid = pg_locks.database WHERE locktype = 'advisory' AND datname = $1",
      [database.name],
    );
    expect(Number(locks.rows[0]!.held)).toBe(0);
  }, 90_000);

  it('writes the requests it is given through it, and searches them back through it', async () => {
    const pool = poolThroughBouncer();
    await migrate(pool);
    const setting = testRequestLogSetting('rlbouncer');
    const service = await startTestRequestLog({ ...setting.dependencies, pool, aheadDays: 1 });
    try {
      const keyId = `key_BOUNCER${setting.id.slice(0, 8)}`;
      const events = [completedUsageEvent(keyId), completedUsageEvent(keyId), completedUsageEvent(keyId)];
      for (const event of events) await service.nc.jetstream().publish(setting.names.subject, encodeUsageEvent(event), { msgID: event.event_id! });
      const search = (request: SearchRequestsRequest) =>
        callUnary<SearchRequestsRequest, SearchRequestsResponseOutput>(service.client, service.client.SearchRequests, request, { deadlineMs: 10_000 });
      const found = await eventually(
        async () => {
          const { requests } = await search({ key_id: keyId, page_size: 10 });
          return requests.length === events.length ? requests : undefined;
        },
        'the three requests found by a search through PgBouncer',
        30_000,
      );
      expect(found.map((request) => request.event_id).sort()).toEqual(events.map((event) => event.event_id).sort());
    } finally {
      await service.stop();
    }
  }, 90_000);
});
