/**
 * The batch service's PostgreSQL: its schema, versioned in the repository as
 * services/batch/migrations/NNN_*.sql and applied at start, each once, in the schema `batch`,
 * recorded in batch.migrations; replicas starting together take one advisory lock in one
 * transaction, so that only one applies them and the others find them applied. And whether the
 * database answers now (readiness, gateway_batch_database_up).
 */
import { fileURLToPath } from 'node:url';
import type { Logger } from '@gateway/logger';
import { inTransaction, type Migration, readMigrations as readMigrationFiles } from '@gateway/postgres';
import type pg from 'pg';

/** The folder of the migration files. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations', import.meta.url));

/** The advisory lock the migrations are applied under: an arbitrary constant ("batchs" in ASCII). */
const SCHEMA_LOCK = 0x626174636873;

/** The batch service's migrations, by version (see @gateway/postgres's readMigrations). */
export function readMigrations(folder: string = MIGRATIONS_DIR): Migration[] {
  return readMigrationFiles(folder);
}

/**
 * Applies the migrations not applied yet, in one transaction holding the advisory lock (taken with
 * pg_advisory_xact_lock, so COMMIT or ROLLBACK releases it, also behind a transaction pooler);
 * resolves the versions it applied.
 */
export function migrate(pool: pg.Pool, migrations: Migration[] = readMigrations()): Promise<number[]> {
  return inTransaction(
    pool,
    async (client) => {
      await client.query('CREATE SCHEMA IF NOT EXISTS batch');
      await client.query(
        'CREATE TABLE IF NOT EXISTS batch.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      const { rows } = await client.query<{ version: number }>('SELECT version FROM batch.migrations');
      const applied = new Set(rows.map((row) => row.version));
      const done: number[] = [];
      for (const migration of migrations) {
        if (applied.has(migration.version)) continue;
        try {
          await client.query(migration.sql);
        } catch (error) {
          throw new Error(`migration ${migration.name} failed: ${(error as Error).message}`, { cause: error });
        }
        await client.query('INSERT INTO batch.migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
        done.push(migration.version);
      }
      return done;
    },
    { lock: SCHEMA_LOCK },
  );
}

/** Whether PostgreSQL answers, as last seen. */
export interface DatabaseWatch {
  /** True once migrated, while the last query of the service or probe succeeded. */
  readonly up: boolean;
  /** Marks it up (a query succeeded). */
  answered(): void;
  /** Marks it away (a query failed), logged once until it answers again. */
  failed(error: unknown): void;
  /** Stops probing. */
  close(): void;
}

/** Watches `pool`: a probe every `intervalMs` beside what the service's own queries tell. */
export function watchDatabase(pool: pg.Pool, options: { intervalMs: number; logger: Logger }): DatabaseWatch {
  let up = false;
  const watch: DatabaseWatch = {
    get up() {
      return up;
    },
    answered() {
      if (!up) options.logger.info('PostgreSQL answers');
      up = true;
    },
    failed(error) {
      if (up) options.logger.warn({ err: describeError(error) }, 'PostgreSQL does not answer; the lane waits for it');
      up = false;
    },
    close: () => clearInterval(timer),
  };
  const timer = setInterval(() => {
    pool.query('SELECT 1').then(
      () => watch.answered(),
      (error: unknown) => watch.failed(error),
    );
  }, options.intervalMs);
  timer.unref();
  return watch;
}

/** What the log says of a database error: its message and code, nothing of the query's values. */
export function describeError(error: unknown): { message: string; code?: string } {
  const { message = String(error), code } = (error ?? {}) as { message?: string; code?: string };
  return { message, ...(code && { code }) };
}
