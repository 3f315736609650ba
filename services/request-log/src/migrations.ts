/**
 * The request log's schema, versioned in the repository: services/request-log/migrations/NNN_*.sql,
 * applied in order at start, each once, each in its own transaction, recorded in
 * request_log_migrations. Replicas starting together take one advisory lock, so only one applies
 * them and the others find them applied.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

/** The folder of the migration files. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations', import.meta.url));

/**
 * The advisory lock the schema's changes are made under (migrations, partitions): one 64-bit key
 * of the database, an arbitrary constant ("reqlog" in ASCII).
 */
export const SCHEMA_LOCK = 0x7265716c6f67;

/** One migration file. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const FILE_NAME = /^(\d{3})_[a-z0-9_]+\.sql$/;

/** The migrations of a folder, by version; throws on a file that is not NNN_name.sql or a version used twice. */
export function readMigrations(folder: string = MIGRATIONS_DIR): Migration[] {
  const migrations = readdirSync(folder)
    .filter((name) => name.endsWith('.sql'))
    .map((name) => {
      const match = FILE_NAME.exec(name);
      if (!match) throw new Error(`migration file ${name} is not named NNN_lower_snake.sql`);
      return { version: Number(match[1]), name, sql: readFileSync(join(folder, name), 'utf8') };
    })
    .sort((a, b) => a.version - b.version);
  for (let index = 1; index < migrations.length; index += 1)
    if (migrations[index]!.version === migrations[index - 1]!.version) throw new Error(`two migrations have version ${migrations[index]!.version}`);
  return migrations;
}

/** Runs `work` on one connection of the pool while it holds the schema's advisory lock. */
export async function withSchemaLock<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [SCHEMA_LOCK]);
    try {
      return await work(client);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [SCHEMA_LOCK]);
    }
  } finally {
    client.release();
  }
}

/** Applies the migrations not applied yet, under the schema lock; resolves the versions it applied. */
export async function migrate(pool: pg.Pool, migrations: Migration[] = readMigrations()): Promise<number[]> {
  return withSchemaLock(pool, async (client) => {
    await client.query(
      'CREATE TABLE IF NOT EXISTS request_log_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const { rows } = await client.query<{ version: number }>('SELECT version FROM request_log_migrations');
    const applied = new Set(rows.map((row) => row.version));
    const done: number[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query('INSERT INTO request_log_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${migration.name} failed: ${(error as Error).message}`, { cause: error });
      }
      done.push(migration.version);
    }
    return done;
  });
}
