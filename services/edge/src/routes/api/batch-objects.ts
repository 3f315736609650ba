/**
 * The batch service's files and batches as OpenAI's Files and Batch APIs answer them: the File
 * object, the Batch object (null for every step not reached yet, for a file not written, for no
 * errors and no metadata), a list page, and a deleted file.
 */
import type { BatchInfoOutput, FileInfoOutput } from '@gateway/proto';

/** OpenAI's File object. */
export interface FileJson {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  /** When the file will be removed (Unix seconds); absent for never. */
  expires_at?: number;
}

/** One validation error of a batch's file, as OpenAI's `errors.data` lists them. */
export interface BatchErrorJson {
  code?: string;
  message?: string;
  param?: string | null;
  line?: number | null;
}

/** OpenAI's Batch object. */
export interface BatchJson {
  id: string;
  object: 'batch';
  endpoint: string;
  errors: { object: 'list'; data: BatchErrorJson[] } | null;
  input_file_id: string;
  completion_window: string;
  status: string;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  in_progress_at: number | null;
  expires_at: number | null;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  request_counts: { total: number; completed: number; failed: number };
  metadata: Record<string, string> | null;
}

/** OpenAI's list page: the items, the first and last ids (null for none), whether more follow. */
export interface ListJson<Item extends { id: string }> {
  object: 'list';
  data: Item[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** A kept file as OpenAI's File object. */
export function fileJson(info: FileInfoOutput): FileJson {
  const expiresAt = Number(info.expires_at ?? 0);
  return {
    id: info.id ?? '',
    object: 'file',
    bytes: Number(info.bytes ?? 0),
    created_at: Number(info.created_at ?? 0),
    filename: info.filename ?? '',
    purpose: info.purpose ?? '',
    ...(expiresAt > 0 ? { expires_at: expiresAt } : {}),
  };
}

/** A removed file as OpenAI answers its DELETE. */
export function deletedFileJson(id: string): { id: string; object: 'file'; deleted: true } {
  return { id, object: 'file', deleted: true };
}

/** A Unix time of the batch service (0 until it happens) as OpenAI's: null until set. */
function when(seconds: number | undefined): number | null {
  const value = Number(seconds ?? 0);
  return value > 0 ? value : null;
}

/** JSON the batch service wrote ('' for none) read back; null for none, or for JSON it should never send. */
function parsed(json: string | undefined): unknown {
  if (!json) return null;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return null;
  }
}

/** A batch's validation errors as OpenAI's `errors`: `{object: "list", data}`, or null for none. */
function errorsOf(json: string | undefined): BatchJson['errors'] {
  const data = parsed(json);
  return Array.isArray(data) && data.length > 0 ? { object: 'list', data: data as BatchErrorJson[] } : null;
}

/** A batch's metadata: its pairs, or null for none. */
function metadataOf(json: string | undefined): BatchJson['metadata'] {
  const metadata = parsed(json);
  return typeof metadata === 'object' && metadata !== null && !Array.isArray(metadata) ? (metadata as Record<string, string>) : null;
}

/** A batch as OpenAI's Batch object. */
export function batchJson(info: BatchInfoOutput): BatchJson {
  return {
    id: info.id ?? '',
    object: 'batch',
    endpoint: info.endpoint ?? '',
    errors: errorsOf(info.errors_json),
    input_file_id: info.input_file_id ?? '',
    completion_window: info.completion_window ?? '',
    status: info.status ?? '',
    output_file_id: info.output_file_id || null,
    error_file_id: info.error_file_id || null,
    created_at: Number(info.created_at ?? 0),
    in_progress_at: when(info.in_progress_at),
    expires_at: when(info.expires_at),
    finalizing_at: when(info.finalizing_at),
    completed_at: when(info.completed_at),
    failed_at: when(info.failed_at),
    expired_at: when(info.expired_at),
    cancelling_at: when(info.cancelling_at),
    cancelled_at: when(info.cancelled_at),
    request_counts: {
      total: info.request_counts?.total ?? 0,
      completed: info.request_counts?.completed ?? 0,
      failed: info.request_counts?.failed ?? 0,
    },
    metadata: metadataOf(info.metadata_json),
  };
}

/** A page of items as OpenAI's list. */
export function listJson<Item extends { id: string }>(data: Item[], hasMore: boolean): ListJson<Item> {
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}
