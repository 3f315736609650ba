/**
 * Writes the log's rows in batches: the rows of the messages that arrive within `batchDelayMs` (up
 * to `batchRows`) leave in one multi-row INSERT ... ON CONFLICT DO NOTHING, a single statement
 * that commits or fails whole. Each message's promise settles with its batch, and the consumer
 * acknowledges the message only then: a writer killed before the commit leaves its messages
 * unacknowledged (JetStream redelivers them), and an event written twice is still one row (the
 * key is the event id and its time). One INSERT at a time, so PostgreSQL sees one writer per
 * replica however fast events come. With `availability`, a batch that failed because PostgreSQL is
 * away is not failed: it waits, first in line, with every message behind it, until PostgreSQL
 * answers again, and is written then (a batch that failed with the database up fails, and its
 * messages are redelivered at their delays).
 */
import type pg from 'pg';
import type { DatabaseAvailability } from './database-availability.js';
import { createPartitions, dayOf, firstKeptDay, type PartitionedTable } from './partitions.js';
import type { RequestRow } from './request-record.js';

/** A row of one of the partitioned tables: partitioned by its received_at. */
export interface PartitionedRow {
  received_at: Date;
}

/** What one batch came to: rows inserted, already there (delivered again), older than the retention; the time it took. */
export interface Written {
  inserted: number;
  duplicates: number;
  expired: number;
  seconds: number;
}

/** What a writer writes to and how it batches. */
export interface RequestWriterOptions<Row extends PartitionedRow = RequestRow> {
  pool: pg.Pool;
  /** The table written, and its columns in the INSERT's order (REQUEST_COLUMNS for request_log). */
  table: PartitionedTable;
  columns: readonly (keyof Row & string)[];
  /** Rows one INSERT writes at most (REQUEST_LOG_BATCH_ROWS); a message's rows are never split. */
  batchRows: number;
  /** How long a row waits for others (REQUEST_LOG_BATCH_DELAY_MS). */
  batchDelayMs: number;
  /** Days kept (REQUEST_LOG_RETENTION_DAYS): rows of older days are not written, their partitions are gone. */
  retentionDays: number;
  /** The clock, in Unix ms; tests move their own. */
  now?: () => number;
  /** Told of each batch written: rows new, and rows that were already there (events delivered again). */
  onWritten?: (written: Written) => void;
  /** Told of each INSERT that failed, held or not. */
  onFailed?: (error: unknown) => void;
  /** Tells a database that is away from a batch that failed on its own; without it every failure fails its batch. */
  availability?: DatabaseAvailability;
}

/** The batching writer. */
export interface RequestWriter<Row extends PartitionedRow = RequestRow> {
  /** Writes a message's rows with the next batch; resolves once committed, rejects when the batch failed. */
  write(rows: Row[]): Promise<void>;
  /** Writes what is waiting now, then resolves. */
  flush(): Promise<void>;
}

interface Waiting<Row> {
  rows: Row[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** The INSERT of `count` rows. */
function insertStatement(table: string, columns: readonly string[], count: number): string {
  const width = columns.length;
  const values: string[] = [];
  for (let row = 0; row < count; row += 1) values.push(`(${columns.map((_, column) => `$${row * width + column + 1}`).join(', ')})`);
  return `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values.join(', ')} ON CONFLICT DO NOTHING`;
}

/** Creates a writer; see the file's comment. */
export function createRequestWriter<Row extends PartitionedRow = RequestRow>(options: RequestWriterOptions<Row>): RequestWriter<Row> {
  const { pool, table, columns } = options;
  const now = options.now ?? Date.now;
  let waiting: Waiting<Row>[] = [];
  let waitingRows = 0;
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | undefined;
  // Days whose partition this process created or found: checked once each.
  const knownDays = new Set<number>();

  const insert = async (rows: Row[]): Promise<{ inserted: number; expired: number }> => {
    const keepFrom = firstKeptDay(now(), options.retentionDays);
    const kept = rows.filter((row) => dayOf(row.received_at.getTime()) >= keepFrom);
    if (kept.length === 0) return { inserted: 0, expired: rows.length };
    const days = new Set(kept.map((row) => dayOf(row.received_at.getTime())));
    const missing = [...days].filter((day) => !knownDays.has(day));
    if (missing.length > 0) {
      await createPartitions(pool, missing, table);
      for (const day of missing) knownDays.add(day);
    }
    const parameters = kept.flatMap((row) => columns.map((column) => row[column]));
    try {
      const result = await pool.query(insertStatement(table, columns, kept.length), parameters);
      return { inserted: result.rowCount ?? 0, expired: rows.length - kept.length };
    } catch (error) {
      // A partition dropped meanwhile (by another replica's retention): look again next time.
      if ((error as { code?: string }).code === '23514') knownDays.clear();
      throw error;
    }
  };

  const writeBatch = async (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    const batch: Waiting<Row>[] = [];
    let rows = 0;
    while (waiting.length > 0 && (batch.length === 0 || rows + waiting[0]!.rows.length <= options.batchRows)) {
      const next = waiting.shift()!;
      batch.push(next);
      rows += next.rows.length;
    }
    waitingRows -= rows;
    if (options.availability?.closed && !options.availability.up) {
      // Shutting down with PostgreSQL away: handed back at once, for a replica that reaches it.
      for (const entry of batch) entry.reject(new Error('PostgreSQL is away and the request log is stopping; handed back'));
      return;
    }
    const started = performance.now();
    try {
      const all = batch.flatMap((entry) => entry.rows);
      const { inserted, expired } = await insert(all);
      options.onWritten?.({ inserted, duplicates: all.length - expired - inserted, expired, seconds: (performance.now() - started) / 1000 });
      for (const entry of batch) entry.resolve();
    } catch (error) {
      options.onFailed?.(error);
      const { availability } = options;
      if (availability && !availability.closed && !(await availability.answersAfterFailure())) {
        // PostgreSQL is away: the batch waits first in line for its return, then leaves at once.
        waiting.unshift(...batch);
        waitingRows += rows;
        if (await availability.whenUp()) return;
        waiting.splice(0, batch.length);
        waitingRows -= rows;
      }
      for (const entry of batch) entry.reject(error);
    }
  };

  /** Starts the next batch when one is due and none is being written. */
  const schedule = () => {
    if (writing || waiting.length === 0) return;
    if (waitingRows >= options.batchRows || options.batchDelayMs === 0) {
      writing = writeBatch().finally(() => {
        writing = undefined;
        schedule();
      });
      return;
    }
    timer ??= setTimeout(() => {
      timer = undefined;
      if (writing) return;
      writing = writeBatch().finally(() => {
        writing = undefined;
        schedule();
      });
    }, options.batchDelayMs);
  };

  return {
    write: (rows) => {
      if (rows.length === 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        waiting.push({ rows, resolve, reject });
        waitingRows += rows.length;
        schedule();
      });
    },
    flush: async () => {
      while (writing || waiting.length > 0) {
        if (!writing) {
          writing = writeBatch().finally(() => {
            writing = undefined;
          });
        }
        await writing;
      }
      waiting = [];
    },
  };
}
