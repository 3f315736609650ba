/**
 * PostgreSQL for tests: the server POSTGRES_URL names (scripts/dependencies.sh prints it), else
 * the one on 127.0.0.1:5432 (trust authentication, user postgres). Each test run works in a
 * database of its own, created here and dropped after, so parallel runs never share rows.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The server's URL, naming its maintenance database (`postgres`). */
export function postgresUrl(): string {
  return process.env.POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
}

/** A database of one test run. */
export interface TestDatabase {
  /** Its name (`reqlog_test_<random>`). */
  readonly name: string;
  /** Its URL, for DATABASE_URL. */
  readonly url: string;
  /** Refuses new connections and ends the open ones (PostgreSQL "down" for this database only), or lets them in again. */
  setReachable(reachable: boolean): Promise<void>;
  /** Drops it, ending the connections left. */
  drop(): Promise<void>;
}

/** The URL of `database` on the server of `serverUrl`. */
function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Runs statements on the server's maintenance database. */
async function onServer(statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}

/** Creates a database for one test run; `prefix` names what it is for. */
export async function createTestDatabase(prefix = 'reqlog_test'): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await onServer([`CREATE DATABASE ${name}`]);
  const terminate = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}' AND pid <> pg_backend_pid()`;
  return {
    name,
    url: databaseUrl(postgresUrl(), name),
    setReachable: (reachable) =>
      onServer(reachable ? [`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`] : [`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`, terminate]),
    drop: () => onServer([`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`, terminate, `DROP DATABASE IF EXISTS ${name}`]),
  };
}
