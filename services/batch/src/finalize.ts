/**
 * How a batch ends, exactly once whatever the replicas: a batch whose lines all ended (completed),
 * a cancelled one none of whose lines runs any more (cancelled), and one past its window
 * (expired) are finalized in one transaction that holds the batch's row (FOR UPDATE SKIP LOCKED:
 * the replica that gets it finalizes, the others skip it, and a replica dying midway leaves it to
 * the next): `finalizing`, its output file (and error file when a line got no answer) written in
 * input order, the counts set, the final status, and the sealed API key removed.
 */
import type { Logger } from '@gateway/logger';
import type pg from 'pg';
import { errorLine, outputLine } from './batch-lines.js';
import { inTransaction } from '@gateway/postgres';
import { insertFile } from './file-store.js';

/** Batches finalized per look. */
const FINALIZED_AT_ONCE = 10;

/** Where a batch that ends goes, and when. */
const FINAL_STATUSES = { completed: 'completed_at', expired: 'expired_at', cancelled: 'cancelled_at' } as const;

type FinalStatus = keyof typeof FINAL_STATUSES;

/** Batches ready to end: every line ended, cancelled with none running, or past their window. */
const READY = `(b.status = 'in_progress' AND (b.expires_at < now()
    OR NOT EXISTS (SELECT 1 FROM batch.batch_lines l WHERE l.batch_id = b.id AND l.status IN ('queued', 'running'))))
  OR (b.status = 'cancelling'
    AND NOT EXISTS (SELECT 1 FROM batch.batch_lines l WHERE l.batch_id = b.id AND l.status = 'running' AND l.lease_until > now()))`;

/** Finalizes the batches ready to end; resolves the ids this replica finalized. */
export async function finalizeReady(pool: pg.Pool, logger: Logger): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(`SELECT b.id FROM batch.batches b WHERE ${READY} ORDER BY b.seq LIMIT ${FINALIZED_AT_ONCE}`);
  const done: string[] = [];
  for (const { id } of rows) {
    const status = await finalizeBatch(pool, id);
    if (!status) continue;
    done.push(id);
    logger.info({ batch_id: id, status }, 'batch ended');
  }
  return done;
}

/** One batch finalized if it is still ready and no other replica holds it; resolves its final status, or undefined. */
async function finalizeBatch(pool: pg.Pool, id: string): Promise<FinalStatus | undefined> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query<{ key_id: string; team_id: string; status: string; expired: boolean; open_lines: boolean }>(
      `SELECT b.key_id, b.team_id, b.status, b.expires_at < now() AS expired,
         EXISTS (SELECT 1 FROM batch.batch_lines l WHERE l.batch_id = b.id AND l.status IN ('queued', 'running')) AS open_lines
       FROM batch.batches b WHERE b.id = $1 AND (${READY}) FOR UPDATE OF b SKIP LOCKED`,
      [id],
    );
    const batch = rows[0];
    if (!batch) return undefined;
    const final: FinalStatus = batch.status === 'cancelling' ? 'cancelled' : batch.open_lines && batch.expired ? 'expired' : 'completed';
    await client.query("UPDATE batch.batches SET status = 'finalizing', finalizing_at = now() WHERE id = $1", [id]);
    const { rows: lines } = await client.query<{
      custom_id: string;
      status: 'done' | 'failed';
      status_code: number;
      request_id: string | null;
      response_body: unknown;
      error_code: string;
      error_message: string;
    }>(
      `SELECT custom_id, status, status_code, request_id, response_body, error_code, error_message
       FROM batch.batch_lines WHERE batch_id = $1 AND status IN ('done', 'failed') ORDER BY line_index`,
      [id],
    );
    const answered: string[] = [];
    const failed: string[] = [];
    for (const line of lines)
      if (line.status === 'done')
        answered.push(outputLine(line.custom_id, { statusCode: line.status_code, requestId: line.request_id ?? '', body: line.response_body }));
      else failed.push(errorLine(line.custom_id, { code: line.error_code, message: line.error_message }));
    const owner = { key_id: batch.key_id, team_id: batch.team_id };
    const fileOf = (lines: string[], name: string) =>
      insertFile(
        pool,
        { owner, filename: `${id}_${name}.jsonl`, purpose: 'batch_output', content: Buffer.from(lines.map((line) => `${line}\n`).join('')) },
        undefined,
        client,
      );
    const output = await fileOf(answered, 'output');
    const errors = failed.length > 0 ? await fileOf(failed, 'error') : undefined;
    await client.query(
      `UPDATE batch.batches SET status = $2, ${FINAL_STATUSES[final]} = now(), output_file_id = $3, error_file_id = $4,
         total_count = (SELECT count(*) FROM batch.batch_lines WHERE batch_id = $1), completed_count = $5, failed_count = $6, sealed_api_key = NULL
       WHERE id = $1`,
      [id, final, output.id, errors?.id ?? '', answered.length, failed.length],
    );
    return final;
  });
}
