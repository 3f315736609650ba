/**
 * How a batch ends, exactly once whatever the replicas: a batch whose lines all ended (completed),
 * a cancelled one none of whose lines runs any more (cancelled), and one past its window
 * (expired) are finalized in one transaction that holds the batch's row (FOR UPDATE SKIP LOCKED:
 * the replica that gets it finalizes, the others skip it, and a replica dying midway leaves it to
 * the next): `finalizing`, its output file (and error file when a line got no answer) written in
 * input order, the counts set, the final status, and the sealed API key removed. A batch of
 * Anthropic's Message Batches API gets one results file instead, in Anthropic's form: a line for
 * every request, those never sent `canceled` or `expired`.
 */
import type { Logger } from '@gateway/logger';
import type pg from 'pg';
import { errorLine, outputLine } from './batch-lines.js';
import { inTransaction } from '@gateway/postgres';
import { insertFile } from './file-store.js';
import { ANTHROPIC_API, type MessageOutcome, resultLine, succeeded } from './message-batch-lines.js';

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

/** A line of a batch that ends, as finalizing reads it. */
interface EndedLine {
  custom_id: string;
  status: 'done' | 'failed' | 'queued' | 'running';
  status_code: number;
  request_id: string | null;
  response_body: unknown;
  error_code: string;
  error_message: string;
}

/**
 * The files' lines of a batch that ends, in input order: OpenAI's output and error lines, or for an
 * Anthropic batch its results lines (a line never sent `unsent`); and Anthropic's counts of them.
 */
function writtenLines(lines: EndedLine[], anthropic: boolean, unsent: 'canceled' | 'expired') {
  const answered: string[] = [];
  const failed: string[] = [];
  const results: string[] = [];
  const counts = { succeeded: 0, errored: 0, canceled: 0, expired: 0 };
  for (const line of lines) {
    const answer = { statusCode: line.status_code, requestId: line.request_id ?? '', body: line.response_body };
    const error = { code: line.error_code, message: line.error_message };
    const outcome: MessageOutcome = line.status === 'done' ? { answer } : line.status === 'failed' ? { error } : { unsent };
    if ('unsent' in outcome) counts[outcome.unsent] += 1;
    else if ('answer' in outcome && succeeded(line.status_code)) counts.succeeded += 1;
    else counts.errored += 1;
    if (anthropic) results.push(resultLine(line.custom_id, outcome));
    else if (line.status === 'done') answered.push(outputLine(line.custom_id, answer));
    else if (line.status === 'failed') failed.push(errorLine(line.custom_id, error));
  }
  return { answered, failed, results, counts };
}

/** One batch finalized if it is still ready and no other replica holds it; resolves its final status, or undefined. */
async function finalizeBatch(pool: pg.Pool, id: string): Promise<FinalStatus | undefined> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query<{ key_id: string; team_id: string; status: string; api: string; expired: boolean; open_lines: boolean }>(
      `SELECT b.key_id, b.team_id, b.status, b.api, b.expires_at < now() AS expired,
         EXISTS (SELECT 1 FROM batch.batch_lines l WHERE l.batch_id = b.id AND l.status IN ('queued', 'running')) AS open_lines
       FROM batch.batches b WHERE b.id = $1 AND (${READY}) FOR UPDATE OF b SKIP LOCKED`,
      [id],
    );
    const batch = rows[0];
    if (!batch) return undefined;
    const final: FinalStatus = batch.status === 'cancelling' ? 'cancelled' : batch.open_lines && batch.expired ? 'expired' : 'completed';
    await client.query("UPDATE batch.batches SET status = 'finalizing', finalizing_at = now() WHERE id = $1", [id]);
    const { rows: lines } = await client.query<EndedLine>(
      `SELECT custom_id, status, status_code, request_id, response_body, error_code, error_message
       FROM batch.batch_lines WHERE batch_id = $1 ORDER BY line_index`,
      [id],
    );
    const anthropic = batch.api === ANTHROPIC_API;
    const { answered, failed, results, counts } = writtenLines(lines, anthropic, final === 'cancelled' ? 'canceled' : 'expired');
    const owner = { key_id: batch.key_id, team_id: batch.team_id };
    const fileOf = (lines: string[], name: string) =>
      insertFile(
        pool,
        { owner, filename: `${id}_${name}.jsonl`, purpose: 'batch_output', content: Buffer.from(lines.map((line) => `${line}\n`).join('')) },
        undefined,
        client,
      );
    const output = anthropic ? await fileOf(results, 'results') : await fileOf(answered, 'output');
    const errors = failed.length > 0 ? await fileOf(failed, 'error') : undefined;
    await client.query(
      `UPDATE batch.batches SET status = $2, ${FINAL_STATUSES[final]} = now(), output_file_id = $3, error_file_id = $4,
         total_count = $5, completed_count = $6, failed_count = $7, succeeded_count = $8, errored_count = $9, canceled_count = $10,
         expired_count = $11, sealed_api_key = NULL
       WHERE id = $1`,
      [
        id,
        final,
        output.id,
        errors?.id ?? '',
        lines.length,
        lines.filter((line) => line.status === 'done').length,
        lines.filter((line) => line.status === 'failed').length,
        counts.succeeded,
        counts.errored,
        counts.canceled,
        counts.expired,
      ],
    );
    return final;
  });
}
