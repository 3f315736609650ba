/**
 * The request log's schema, versioned in the repository: services/request-log/migrations/NNN_*.sql,
 * applied in order at start, each once, each in its own transaction, recorded in
 * request_log_migrations. Replicas starting together take one advisory lock, so only one applies
 * them and the others find them applied.
 */
import { fileURLToPath } from 'node:url';
import { inTransaction, type Migration, readMigrations as readMigrationFiles } from '@gateway/postgres';
import type pg from 'pg';

export type { Migration } from '@gateway/postgres';

/** The folder of the migration files. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations', import.meta.url));

/**
 * The advisory lock the schema's changes are made under (migrations, partitions): one 64-bit key
 * of the database, an arbitrary constant ("reqlog" in ASCII).
 */
export const SCHEMA_LOCK = 0x7265716c6f67;

/** The request log's migrations, by version (see @gateway/postgres's readMigrations). */
export function readMigrations(folder: string = MIGRATIONS_DIR): Migration[] {
  return readMigrationFiles(folder);
}

/**
 * Runs `work` in one transaction that holds the schema's advisory lock, taken with
 * pg_advisory_xact_lock and so released by the transaction's COMMIT or ROLLBACK. A transaction
 * runs on one server connection even behind a transaction-pooling PgBouncer, where a session lock
 * (pg_advisory_lock) would be taken on one server connection and its unlock sent on another,
 * leaving the lock held and the next replica's start waiting for ever.
 */
export function withSchemaLock<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return inTransaction(pool, work, { lock: SCHEMA_LOCK });
}

/**
 * Applies the migrations not applied yet, each in a transaction of its own under the schema lock
 * (another replica's start waits, then finds it applied); resolves the versions it applied.
 */
export async function migrate(pool: pg.Pool, migrations: Migration[] = readMigrations()): Promise<number[]> {
  await withSchemaLock(pool, (client) =>
    client.query(
      'CREATE TABLE IF NOT EXISTS request_log_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    ),
  );
  const done: number[] = [];
  for (const migration of migrations) {
    const applied = await withSchemaLock(pool, async (client) => {
      const { rowCount } = await client.query('SELECT 1 FROM request_log_migrations WHERE version = $1', [migration.version]);
      if (rowCount) return false;
      try {
        await client.query(migration.sql);
      } catch (error) {
        throw new Error(`migration ${migration.name} failed: ${(error as Error).message}`, { cause: error });
      }
      await client.query('INSERT INTO request_log_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      return true;
    });
    if (applied) done.push(migration.version);
  }
  return done;
}

/**
 * What in a migration would break the version still running beside it during a rolling upgrade
 * (expand-only migrations: a migration adds, it never takes away or changes what the previous
 * version reads or writes): a table, column, view, type or schema dropped, anything renamed, a
 * column's type changed, a column made NOT NULL, or a NOT NULL column added without a DEFAULT (the
 * previous version's INSERTs do not name it). The daily partitions are dropped by the retention
 * (partitions.ts), never by a migration. A statement the rule must let through once the previous
 * version runs nowhere (the second, contracting step of a change) carries a comment
 * `-- contract: <why>` on the line before it. Empty when the migration expands only.
 */
export function contractingStatements(sql: string): string[] {
  const problems: string[] = [];
  // Statements, with the line comments dropped but `-- contract:` noted on the statement after it.
  let allowNext = false;
  const statements: Array<{ text: string; allowed: boolean }> = [];
  let current = '';
  let currentAllowed = false;
  for (const line of sql.split('\n')) {
    const comment = line.indexOf('--');
    const code = comment >= 0 ? line.slice(0, comment) : line;
    if (comment >= 0 && /^--\s*contract:/i.test(line.slice(comment).trim())) allowNext = true;
    for (const part of code.split(/(;)/)) {
      if (part === ';') {
        if (current.trim()) statements.push({ text: current.trim().replace(/\s+/g, ' '), allowed: currentAllowed });
        current = '';
        currentAllowed = false;
        continue;
      }
      if (part.trim() && !current.trim()) {
        currentAllowed = allowNext;
        allowNext = false;
      }
      current += ` ${part}`;
    }
  }
  if (current.trim()) statements.push({ text: current.trim().replace(/\s+/g, ' '), allowed: currentAllowed });
  for (const { text, allowed } of statements) {
    if (allowed) continue;
    const upper = text.toUpperCase();
    const rules: Array<[boolean, string]> = [
      [/\bDROP\s+(TABLE|COLUMN|VIEW|MATERIALIZED\s+VIEW|TYPE|SCHEMA|FUNCTION)\b/.test(upper), 'drops what the previous version may read'],
      [/\bRENAME\b/.test(upper), 'renames what the previous version may read'],
      [/\bALTER\s+COLUMN\s+\S+\s+(SET\s+DATA\s+)?TYPE\b/.test(upper), "changes a column's type"],
      [/\bALTER\s+COLUMN\s+\S+\s+SET\s+NOT\s+NULL\b/.test(upper), 'makes a column NOT NULL that the previous version may leave empty'],
      [
        /^ALTER\s+TABLE\b/.test(upper) &&
          upper
            .split(/,(?![^(]*\))/)
            .some((clause) => /\bADD\s+(COLUMN\s+)?(?!CONSTRAINT\b)/.test(clause) && /\bNOT\s+NULL\b/.test(clause) && !/\bDEFAULT\b/.test(clause)),
        "adds a NOT NULL column without a DEFAULT (the previous version's INSERTs do not name it)",
      ],
    ];
    for (const [broken, why] of rules) if (broken) problems.push(`${why}: ${text.slice(0, 120)}`);
  }
  return problems;
}
