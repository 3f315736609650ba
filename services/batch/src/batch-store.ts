/**
 * The batches of each key in PostgreSQL (batch.batches and their lines in batch.batch_lines):
 * created from a batch file of the key's (OpenAI's Batch API) or from inline requests (Anthropic's
 * Message Batches API, `api` = `anthropic`), read and listed newest first (each API its own
 * batches), cancelled, and removed once ended; every read and write scoped to the owner's key. The
 * owner's API key is kept sealed (SecretCipher) while the batch runs.
 */
import { GatewayError } from '@gateway/grpc';
import type { BatchInfo, BatchOwnerOutput, CreateBatchRequestOutput, CreateMessageBatchRequestOutput } from '@gateway/proto';
import type { SecretCipher } from '@gateway/redis';
import type pg from 'pg';
import { BATCH_ENDPOINTS, type BatchLine, parseBatchFile, randomId } from './batch-lines.js';
import { inTransaction } from '@gateway/postgres';
import { epoch, fileContent, keyOf } from './file-store.js';
import { ANTHROPIC_API, MESSAGES_URL, OPENAI_API, parseMessageRequests } from './message-batch-lines.js';

/** The statuses of a batch that has not ended. */
export const ACTIVE_STATUSES = ['validating', 'in_progress', 'finalizing', 'cancelling'];

const ACTIVE = `(${ACTIVE_STATUSES.map((status) => `'${status}'`).join(', ')})`;
const TIMES = ['created_at', 'in_progress_at', 'expires_at', 'finalizing_at', 'completed_at', 'failed_at', 'expired_at', 'cancelling_at', 'cancelled_at'];

/** A batch row as BatchInfo; the counts of a running batch read from its lines. */
const BATCH_COLUMNS = `b.id, b.endpoint, b.errors_json, b.input_file_id, b.completion_window, b.status, b.output_file_id, b.error_file_id,
  ${TIMES.map((time) => `${epoch(`b.${time}`)} AS ${time}`).join(', ')},
  CASE WHEN b.status IN ${ACTIVE} THEN (
    SELECT json_build_object('total', count(*), 'completed', count(*) FILTER (WHERE l.status = 'done'), 'failed', count(*) FILTER (WHERE l.status = 'failed'))
    FROM batch.batch_lines l WHERE l.batch_id = b.id)
  ELSE json_build_object('total', b.total_count, 'completed', b.completed_count, 'failed', b.failed_count) END AS request_counts,
  b.metadata_json, b.api,
  CASE WHEN b.status IN ${ACTIVE} THEN (
    SELECT json_build_object('processing', count(*) FILTER (WHERE l.status IN ('queued', 'running')),
      'succeeded', count(*) FILTER (WHERE l.status = 'done' AND l.status_code BETWEEN 200 AND 299),
      'errored', count(*) FILTER (WHERE l.status = 'failed' OR (l.status = 'done' AND l.status_code NOT BETWEEN 200 AND 299)),
      'canceled', 0, 'expired', 0)
    FROM batch.batch_lines l WHERE l.batch_id = b.id)
  ELSE json_build_object('processing', 0, 'succeeded', b.succeeded_count, 'errored', b.errored_count, 'canceled', b.canceled_count,
    'expired', b.expired_count) END AS message_counts`;

/** Lines inserted per statement. */
const INSERT_ROWS = 1_000;

/** NOT_FOUND for a batch id of another key, or none. */
const batchNotFound = (id: string) => GatewayError.of('not_found', `No such batch: ${id}.`, { param: 'batch_id' });

/** OpenAI's metadata: up to 16 pairs of string values (keys up to 64 characters, values up to 512). */
function checkMetadata(text: string): void {
  if (!text) return;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw GatewayError.of('invalid_value', '`metadata` is not valid JSON.', { param: 'metadata' });
  }
  const entries = value && typeof value === 'object' && !Array.isArray(value) ? Object.entries(value) : undefined;
  if (!entries || entries.length > 16 || entries.some(([key, item]) => key.length > 64 || typeof item !== 'string' || item.length > 512))
    throw GatewayError.of('invalid_value', '`metadata` must be an object of at most 16 string values (keys up to 64 characters, values up to 512).', {
      param: 'metadata',
    });
}

/** What creating a batch needs beyond the request. */
export interface CreateOptions {
  cipher: SecretCipher;
  maxLines: number;
}

/**
 * Creates a batch of a batch file of the key's: checked (the file's purpose, every line's url the
 * batch's endpoint, the window), stored `validating` with its lines and then `in_progress`, in one
 * transaction; resolves the batch as it is then.
 */
export async function createBatch(pool: pg.Pool, request: CreateBatchRequestOutput, options: CreateOptions): Promise<BatchInfo> {
  const { keyId, teamId } = keyOf(request.owner);
  if (!request.api_key) throw GatewayError.of('invalid_request', 'The call carries no API key to send the lines with.', { param: 'api_key' });
  if (!(BATCH_ENDPOINTS as readonly string[]).includes(request.endpoint ?? ''))
    throw GatewayError.of('invalid_value', `\`endpoint\` must be one of ${BATCH_ENDPOINTS.join(', ')}.`, { param: 'endpoint' });
  if (request.completion_window !== '24h') throw GatewayError.of('invalid_value', '`completion_window` must be "24h".', { param: 'completion_window' });
  checkMetadata(request.metadata_json ?? '');
  if (!request.input_file_id) throw GatewayError.of('invalid_request', '`input_file_id` is required.', { param: 'input_file_id' });
  const file = await fileContent(pool, keyId, request.input_file_id, 'input_file_id');
  if (file.purpose !== 'batch')
    throw GatewayError.of('invalid_value', `File ${request.input_file_id} is not a batch file (its purpose is ${file.purpose}).`, { param: 'input_file_id' });
  const lines = parseBatchFile(file.content, options.maxLines);
  const stray = lines.find((line) => line.url !== request.endpoint);
  if (stray)
    throw GatewayError.of('invalid_value', `Line ${stray.line} of the file: \`url\` ${stray.url} is not the batch's endpoint ${request.endpoint}.`, {
      param: 'input_file_id',
    });
  return storeBatch(pool, {
    id: randomId('batch_'),
    keyId,
    teamId,
    api: OPENAI_API,
    endpoint: request.endpoint ?? '',
    inputFileId: request.input_file_id,
    metadataJson: request.metadata_json ?? '',
    sealed: options.cipher.seal({ api_key: request.api_key }),
    lines,
  });
}

/**
 * Creates a batch of Anthropic's Message Batches API from its inline requests (JSON Lines of
 * `{custom_id, params}`), each a line POSTed to /v1/messages: `msgbatch_...`, no input file, stored
 * and running as createBatch's.
 */
export async function createMessageBatch(pool: pg.Pool, request: CreateMessageBatchRequestOutput, options: CreateOptions): Promise<BatchInfo> {
  const { keyId, teamId } = keyOf(request.owner);
  if (!request.api_key) throw GatewayError.of('invalid_request', 'The call carries no API key to send the requests with.', { param: 'api_key' });
  const lines = parseMessageRequests(request.requests_jsonl ?? '', options.maxLines);
  return storeBatch(pool, {
    id: randomId('msgbatch_'),
    keyId,
    teamId,
    api: ANTHROPIC_API,
    endpoint: MESSAGES_URL,
    inputFileId: '',
    metadataJson: '',
    sealed: options.cipher.seal({ api_key: request.api_key }),
    lines,
  });
}

/** A checked batch to store. */
interface NewBatch {
  id: string;
  keyId: string;
  teamId: string;
  api: string;
  endpoint: string;
  inputFileId: string;
  metadataJson: string;
  sealed: string;
  lines: BatchLine[];
}

/** Stores a batch `validating` with its lines, then `in_progress`, in one transaction; resolves it as it is then. */
function storeBatch(pool: pg.Pool, batch: NewBatch): Promise<BatchInfo> {
  const { id, lines } = batch;
  return inTransaction(pool, async (client) => {
    await client.query(
      `INSERT INTO batch.batches (id, key_id, team_id, endpoint, input_file_id, completion_window, status, expires_at, metadata_json, sealed_api_key, total_count, api)
       VALUES ($1, $2, $3, $4, $5, '24h', 'validating', now() + interval '24 hours', $6, $7, $8, $9)`,
      [id, batch.keyId, batch.teamId, batch.endpoint, batch.inputFileId, batch.metadataJson, batch.sealed, lines.length, batch.api],
    );
    for (let start = 0; start < lines.length; start += INSERT_ROWS) {
      const part = lines.slice(start, start + INSERT_ROWS);
      await client.query(
        `INSERT INTO batch.batch_lines (batch_id, line_index, custom_id, method, url, body)
         SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::jsonb[])`,
        [
          id,
          part.map((line) => line.index),
          part.map((line) => line.customId),
          part.map((line) => line.method),
          part.map((line) => line.url),
          part.map((line) => JSON.stringify(line.body)),
        ],
      );
    }
    await client.query("UPDATE batch.batches SET status = 'in_progress', in_progress_at = now() WHERE id = $1", [id]);
    const { rows } = await client.query<BatchInfo>(`SELECT ${BATCH_COLUMNS} FROM batch.batches b WHERE b.id = $1`, [id]);
    return rows[0]!;
  });
}

/** One batch of the key; NOT_FOUND for another key's or an unknown id. */
export async function getBatch(pool: pg.Pool, owner: BatchOwnerOutput | undefined, id: string): Promise<BatchInfo> {
  const { keyId } = keyOf(owner);
  const { rows } = await pool.query<BatchInfo>(`SELECT ${BATCH_COLUMNS} FROM batch.batches b WHERE b.id = $1 AND b.key_id = $2`, [id, keyId]);
  if (!rows[0]) throw batchNotFound(id);
  return rows[0];
}

/**
 * The key's batches of one API (`openai` when empty) newest first: at most `limit` (20 when 0; 100
 * at most, 1,000 for `anthropic`) after `after`, or the page just before `before` (the newer
 * batches nearest to it), and whether more follow (past the last, or before the first for a page
 * before).
 */
export async function listBatches(
  pool: pg.Pool,
  owner: BatchOwnerOutput | undefined,
  page: { limit: number; after: string; before?: string; api?: string },
): Promise<{ batches: BatchInfo[]; has_more: boolean }> {
  const { keyId } = keyOf(owner);
  const api = page.api || OPENAI_API;
  if (api !== OPENAI_API && api !== ANTHROPIC_API) throw GatewayError.of('invalid_value', '`api` must be openai or anthropic.', { param: 'api' });
  const most = api === ANTHROPIC_API ? 1_000 : 100;
  if (page.limit < 0 || page.limit > most) throw GatewayError.of('invalid_value', `\`limit\` must be between 1 and ${most}.`, { param: 'limit' });
  const limit = page.limit || 20;
  const cursor = page.after || page.before || '';
  let seq: string | undefined;
  if (cursor) {
    const { rows } = await pool.query<{ seq: string }>('SELECT seq FROM batch.batches WHERE id = $1 AND key_id = $2 AND api = $3', [cursor, keyId, api]);
    if (!rows[0]) throw GatewayError.of('not_found', `No such batch: ${cursor}.`, { param: page.after ? 'after' : 'before' });
    seq = rows[0].seq;
  }
  if (!page.after && seq !== undefined) {
    const { rows } = await pool.query<BatchInfo>(
      `SELECT ${BATCH_COLUMNS} FROM batch.batches b WHERE b.key_id = $1 AND b.api = $2 AND b.seq > $3 ORDER BY b.seq ASC LIMIT $4`,
      [keyId, api, seq, limit + 1],
    );
    return { batches: rows.slice(0, limit).reverse(), has_more: rows.length > limit };
  }
  const { rows } = await pool.query<BatchInfo>(
    `SELECT ${BATCH_COLUMNS} FROM batch.batches b WHERE b.key_id = $1 AND b.api = $2 AND b.seq < $3 ORDER BY b.seq DESC LIMIT $4`,
    [keyId, api, seq ?? '9223372036854775807', limit + 1],
  );
  return { batches: rows.slice(0, limit), has_more: rows.length > limit };
}

/** Asks a running batch of the key to stop (`cancelling`); a batch that already ended is answered as it is. */
export async function cancelBatch(pool: pg.Pool, owner: BatchOwnerOutput | undefined, id: string): Promise<BatchInfo> {
  const { keyId } = keyOf(owner);
  await pool.query(
    "UPDATE batch.batches SET status = 'cancelling', cancelling_at = now() WHERE id = $1 AND key_id = $2 AND status IN ('validating', 'in_progress')",
    [id, keyId],
  );
  return getBatch(pool, owner, id);
}

/**
 * Removes a batch of the key that ended, its lines and its output and error files with it, in one
 * transaction; NOT_FOUND for another key's or an unknown id, INVALID_ARGUMENT for one not ended.
 */
export async function deleteBatch(pool: pg.Pool, owner: BatchOwnerOutput | undefined, id: string): Promise<void> {
  const { keyId } = keyOf(owner);
  await inTransaction(pool, async (client) => {
    const { rows } = await client.query<{ status: string; output_file_id: string; error_file_id: string }>(
      'SELECT status, output_file_id, error_file_id FROM batch.batches WHERE id = $1 AND key_id = $2 FOR UPDATE',
      [id, keyId],
    );
    const batch = rows[0];
    if (!batch) throw batchNotFound(id);
    if (ACTIVE_STATUSES.includes(batch.status))
      throw GatewayError.of('invalid_value', `Batch ${id} has not ended: cancel it and wait for it to end before deleting it.`, { param: 'batch_id' });
    await client.query('DELETE FROM batch.batches WHERE id = $1', [id]);
    const files = [batch.output_file_id, batch.error_file_id].filter(Boolean);
    if (files.length > 0) await client.query('DELETE FROM batch.files WHERE id = ANY($1::text[]) AND key_id = $2', [files, keyId]);
  });
}

/** Batches not ended (validating, in progress, finalizing, cancelling), of every key. */
export async function activeBatches(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ count: number }>(`SELECT count(*)::float8 AS count FROM batch.batches WHERE status IN ${ACTIVE}`);
  return rows[0]!.count;
}
