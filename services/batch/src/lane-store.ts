/**
 * What the batch lane reads and writes in PostgreSQL: it claims lines (FOR UPDATE SKIP LOCKED,
 * with a lease in its replica's name), keeps their leases while they run, writes each line's end
 * only while it still holds the line (so a line taken over by another replica is never written
 * twice), sends a line back to the queue to be sent again later, and hands its lines back when it
 * stops.
 */
import type pg from 'pg';
import type { LineAnswer, LineError } from './batch-lines.js';

/** A line the lane holds, with what it is sent with. */
export interface ClaimedLine {
  batchId: string;
  index: number;
  customId: string;
  url: string;
  body: Record<string, unknown>;
  /** Sends so far, this one included. */
  attempts: number;
  /** The batch owner's key as sealed; null once the batch ended. */
  sealedKey: string | null;
}

/**
 * Claims up to `limit` lines of running batches: queued ones due now, and running ones whose
 * replica's lease ran out; oldest batch first, each in order.
 */
export async function claimLines(pool: pg.Pool, replica: string, limit: number, leaseMs: number): Promise<ClaimedLine[]> {
  const { rows } = await pool.query<{
    batch_id: string;
    line_index: number;
    custom_id: string;
    url: string;
    body: Record<string, unknown>;
    attempts: number;
    sealed_api_key: string | null;
  }>(
    `WITH picked AS (
       SELECT l.batch_id, l.line_index FROM batch.batch_lines l JOIN batch.batches b ON b.id = l.batch_id
       WHERE b.status = 'in_progress'
         AND ((l.status = 'queued' AND (l.not_before IS NULL OR l.not_before <= now())) OR (l.status = 'running' AND l.lease_until < now()))
       ORDER BY b.seq, l.line_index
       LIMIT $2
       FOR UPDATE OF l SKIP LOCKED
     )
     UPDATE batch.batch_lines l
     SET status = 'running', claimed_by = $1, lease_until = now() + $3 * interval '1 millisecond', attempts = l.attempts + 1, not_before = NULL
     FROM picked, batch.batches b
     WHERE l.batch_id = picked.batch_id AND l.line_index = picked.line_index AND b.id = l.batch_id
     RETURNING l.batch_id, l.line_index, l.custom_id, l.url, l.body, l.attempts, b.sealed_api_key`,
    [replica, limit, leaseMs],
  );
  return rows.map((row) => ({
    batchId: row.batch_id,
    index: row.line_index,
    customId: row.custom_id,
    url: row.url,
    body: row.body,
    attempts: row.attempts,
    sealedKey: row.sealed_api_key,
  }));
}

const HELD = "batch_id = $1 AND line_index = $2 AND claimed_by = $3 AND status = 'running'";

/** Writes a line's end, its answer or why it got none; false when this replica no longer holds it. */
export async function finishLine(pool: pg.Pool, replica: string, line: ClaimedLine, end: { answer: LineAnswer } | { error: LineError }): Promise<boolean> {
  const { rowCount } =
    'answer' in end
      ? await pool.query(
          `UPDATE batch.batch_lines SET status = 'done', status_code = $4, request_id = $5, response_body = $6, claimed_by = NULL, lease_until = NULL WHERE ${HELD}`,
          [line.batchId, line.index, replica, end.answer.statusCode, end.answer.requestId, JSON.stringify(end.answer.body ?? null)],
        )
      : await pool.query(
          `UPDATE batch.batch_lines SET status = 'failed', error_code = $4, error_message = $5, claimed_by = NULL, lease_until = NULL WHERE ${HELD}`,
          [line.batchId, line.index, replica, end.error.code, end.error.message],
        );
  return rowCount === 1;
}

/** Sends a held line back to the queue, due in `delayMs`; false when this replica no longer holds it. */
export async function requeueLine(pool: pg.Pool, replica: string, line: ClaimedLine, delayMs: number): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE batch.batch_lines SET status = 'queued', claimed_by = NULL, lease_until = NULL, not_before = now() + $4 * interval '1 millisecond' WHERE ${HELD}`,
    [line.batchId, line.index, replica, delayMs],
  );
  return rowCount === 1;
}

/** Extends the leases of every line this replica runs. */
export async function renewLeases(pool: pg.Pool, replica: string, leaseMs: number): Promise<void> {
  await pool.query(`UPDATE batch.batch_lines SET lease_until = now() + $2 * interval '1 millisecond' WHERE claimed_by = $1 AND status = 'running'`, [
    replica,
    leaseMs,
  ]);
}

/** Hands back every line this replica still runs (queued again, the unfinished attempt not counted); resolves how many. */
export async function releaseLines(pool: pg.Pool, replica: string): Promise<number> {
  const { rowCount } = await pool.query(
    `UPDATE batch.batch_lines SET status = 'queued', claimed_by = NULL, lease_until = NULL, attempts = greatest(attempts - 1, 0) WHERE claimed_by = $1 AND status = 'running'`,
    [replica],
  );
  return rowCount ?? 0;
}
