/** A transaction on one connection of a pool: committed when its work resolves, rolled back when it throws. */
import type pg from 'pg';

/** What a transaction holds besides its connection. */
export interface TransactionOptions {
  /**
   * An advisory lock taken first with pg_advisory_xact_lock, so that COMMIT or ROLLBACK releases
   * it: a transaction runs on one server connection even behind a transaction-pooling PgBouncer,
   * where a session lock (pg_advisory_lock) would be taken on one server connection and its unlock
   * sent on another, leaving the lock held.
   */
  lock?: number;
}

/** Runs `work` in one transaction on one connection of `pool`, and resolves what it resolved. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    try {
      if (options.lock !== undefined) await client.query('SELECT pg_advisory_xact_lock($1)', [options.lock]);
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollback: Error) => {
        broken = rollback;
      });
      throw error;
    }
  } finally {
    // A connection whose ROLLBACK failed is in no known state: closed rather than reused.
    client.release(broken);
  }
}
