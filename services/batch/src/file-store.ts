/**
 * The files of each key in PostgreSQL (batch.files): kept with their bytes, listed newest first a
 * page at a time, read back in windows, removed; every read and write scoped to the owner's key,
 * so that another key's file is not found. Per key, at most so many files and bytes are kept.
 */
import { GatewayError } from '@gateway/grpc';
import type { BatchOwnerOutput, FileInfo } from '@gateway/proto';
import type pg from 'pg';
import { randomId } from './batch-lines.js';
import { inTransaction } from '@gateway/postgres';

/** Unix seconds of a timestamptz column, 0 for NULL. */
export const epoch = (column: string) => `coalesce(floor(extract(epoch FROM ${column})), 0)::float8`;

const FILE_COLUMNS = `id, bytes::float8 AS bytes, ${epoch('created_at')} AS created_at, filename, purpose, ${epoch('expires_at')} AS expires_at`;

/** The per-key bounds of what is kept. */
export interface FileBounds {
  maxFiles: number;
  maxBytes: number;
}

/** A file to keep. */
export interface NewFile {
  owner: BatchOwnerOutput;
  filename: string;
  purpose: string;
  content: Buffer;
}

/** The owner's key, or an INVALID_ARGUMENT naming `owner` when the edge sent none. */
export function keyOf(owner: BatchOwnerOutput | undefined): { keyId: string; teamId: string } {
  if (!owner?.key_id) throw GatewayError.of('invalid_request', 'The call names no owner key.', { param: 'owner' });
  return { keyId: owner.key_id, teamId: owner.team_id ?? '' };
}

/** NOT_FOUND for a file id of another key, or none. */
export const fileNotFound = (id: string, param = 'file_id') => GatewayError.of('not_found', `No such file: ${id}.`, { param });

/** Keeps `file` within the key's bounds (checked under a lock of the key, so two uploads cannot both pass); resolves its info. */
export async function insertFile(pool: pg.Pool, file: NewFile, bounds?: FileBounds, client?: pg.PoolClient): Promise<FileInfo> {
  const { keyId, teamId } = keyOf(file.owner);
  const run = async (db: pg.PoolClient) => {
    if (bounds) {
      await db.query("SELECT pg_advisory_xact_lock(hashtext('batch.files:' || $1))", [keyId]);
      const { rows } = await db.query<{ files: number; bytes: number }>(
        'SELECT count(*)::float8 AS files, coalesce(sum(bytes), 0)::float8 AS bytes FROM batch.files WHERE key_id = $1',
        [keyId],
      );
      const kept = rows[0]!;
      if (kept.files + 1 > bounds.maxFiles)
        throw GatewayError.of('invalid_request', `This key keeps ${kept.files} files, the most it may (${bounds.maxFiles}): delete some first.`, {
          param: 'file',
        });
      if (kept.bytes + file.content.length > bounds.maxBytes)
        throw GatewayError.of(
          'invalid_request',
          `This key's files would hold ${kept.bytes + file.content.length} bytes, over the most it may keep (${bounds.maxBytes}): delete some first.`,
          { param: 'file' },
        );
    }
    const { rows } = await db.query<FileInfo>(
      `INSERT INTO batch.files (id, key_id, team_id, filename, purpose, bytes, content) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${FILE_COLUMNS}`,
      [randomId('file-'), keyId, teamId, file.filename, file.purpose, file.content.length, file.content],
    );
    return rows[0]!;
  };
  if (client) return run(client);
  return inTransaction(pool, run);
}

/** One file of the key; NOT_FOUND for another key's or an unknown id. */
export async function getFile(pool: pg.Pool, owner: BatchOwnerOutput | undefined, id: string): Promise<FileInfo> {
  const { keyId } = keyOf(owner);
  const { rows } = await pool.query<FileInfo>(`SELECT ${FILE_COLUMNS} FROM batch.files WHERE id = $1 AND key_id = $2`, [id, keyId]);
  if (!rows[0]) throw fileNotFound(id);
  return rows[0];
}

/** A file's bytes and purpose, for a batch made of it; NOT_FOUND for another key's or an unknown id. */
export async function fileContent(pool: pg.Pool, keyId: string, id: string, param: string): Promise<{ purpose: string; content: Buffer }> {
  const { rows } = await pool.query<{ purpose: string; content: Buffer }>('SELECT purpose, content FROM batch.files WHERE id = $1 AND key_id = $2', [
    id,
    keyId,
  ]);
  if (!rows[0]) throw fileNotFound(id, param);
  return rows[0];
}

/** The key's files newest first: at most `limit` after `after` (an id of the key's), and whether more follow. */
export async function listFiles(
  pool: pg.Pool,
  owner: BatchOwnerOutput | undefined,
  page: { purpose: string; limit: number; after: string },
): Promise<{ files: FileInfo[]; has_more: boolean }> {
  const { keyId } = keyOf(owner);
  if (page.limit < 0 || page.limit > 10_000) throw GatewayError.of('invalid_value', '`limit` must be between 1 and 10000.', { param: 'limit' });
  const limit = page.limit || 10_000;
  let before = '9223372036854775807';
  if (page.after) {
    const { rows } = await pool.query<{ seq: string }>('SELECT seq FROM batch.files WHERE id = $1 AND key_id = $2', [page.after, keyId]);
    if (!rows[0]) throw fileNotFound(page.after, 'after');
    before = rows[0].seq;
  }
  const { rows } = await pool.query<FileInfo>(
    `SELECT ${FILE_COLUMNS} FROM batch.files WHERE key_id = $1 AND seq < $2 AND ($3 = '' OR purpose = $3) ORDER BY seq DESC LIMIT $4`,
    [keyId, before, page.purpose, limit + 1],
  );
  return { files: rows.slice(0, limit), has_more: rows.length > limit };
}

/** Removes a file of the key; NOT_FOUND for another key's or an unknown id. */
export async function deleteFile(pool: pg.Pool, owner: BatchOwnerOutput | undefined, id: string): Promise<void> {
  const { keyId } = keyOf(owner);
  const { rowCount } = await pool.query('DELETE FROM batch.files WHERE id = $1 AND key_id = $2', [id, keyId]);
  if (!rowCount) throw fileNotFound(id);
}

/** A window of a file's bytes (`offset` from 0), for streaming it without holding it whole. */
export async function fileBytes(pool: pg.Pool, id: string, offset: number, length: number): Promise<Buffer> {
  const { rows } = await pool.query<{ part: Buffer }>('SELECT substring(content FROM $2 FOR $3) AS part FROM batch.files WHERE id = $1', [
    id,
    offset + 1,
    length,
  ]);
  return rows[0]?.part ?? Buffer.alloc(0);
}
