/**
 * The batch service's batches of Anthropic's Message Batches API as Anthropic answers them: the
 * Message Batch object (`processing_status` of the batch's status, Anthropic's `request_counts`,
 * times as RFC 3339 strings, null until they happen, and `results_url` the edge's own results
 * route once the batch ended), a list page (`{data, has_more, first_id, last_id}`), and a deleted
 * batch.
 */
import type { BatchInfoOutput } from '@gateway/proto';

/** Anthropic's Message Batch object. */
export interface MessageBatchJson {
  id: string;
  type: 'message_batch';
  processing_status: 'in_progress' | 'canceling' | 'ended';
  request_counts: { processing: number; succeeded: number; errored: number; canceled: number; expired: number };
  ended_at: string | null;
  created_at: string;
  expires_at: string;
  archived_at: null;
  cancel_initiated_at: string | null;
  results_url: string | null;
}

/** Anthropic's list page: the items, whether more follow, the first and last ids (null for none). */
export interface MessageBatchListJson {
  data: MessageBatchJson[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

/** The statuses of a batch that ended, as the batch service names them. */
const ENDED = new Set(['completed', 'cancelled', 'expired', 'failed']);

/** Whether a batch ended (Anthropic's `ended`): its results can be read. */
export function batchEnded(info: BatchInfoOutput): boolean {
  return ENDED.has(info.status ?? '');
}

/** Unix seconds of the batch service (0 until it happens) as an RFC 3339 string, or null. */
function when(seconds: number | undefined): string | null {
  const value = Number(seconds ?? 0);
  return value > 0 ? new Date(value * 1_000).toISOString() : null;
}

/** Anthropic's `processing_status` of a batch service status. */
function processingStatus(status: string): MessageBatchJson['processing_status'] {
  if (ENDED.has(status)) return 'ended';
  return status === 'cancelling' ? 'canceling' : 'in_progress';
}

/** A batch as Anthropic's Message Batch object; `origin` is where the caller reached the edge (its results_url). */
export function messageBatchJson(info: BatchInfoOutput, origin: string): MessageBatchJson {
  const counts = info.message_counts;
  const ended = batchEnded(info);
  const endedAt = ended ? (when(info.completed_at) ?? when(info.cancelled_at) ?? when(info.expired_at) ?? when(info.failed_at)) : null;
  return {
    id: info.id ?? '',
    type: 'message_batch',
    processing_status: processingStatus(info.status ?? ''),
    request_counts: {
      processing: counts?.processing ?? 0,
      succeeded: counts?.succeeded ?? 0,
      errored: counts?.errored ?? 0,
      canceled: counts?.canceled ?? 0,
      expired: counts?.expired ?? 0,
    },
    ended_at: endedAt,
    created_at: when(info.created_at) ?? new Date(0).toISOString(),
    expires_at: when(info.expires_at) ?? new Date(0).toISOString(),
    archived_at: null,
    cancel_initiated_at: when(info.cancelling_at),
    results_url: ended && info.output_file_id ? `${origin}/v1/messages/batches/${encodeURIComponent(info.id ?? '')}/results` : null,
  };
}

/** A page of batches as Anthropic's list. */
export function messageBatchListJson(data: MessageBatchJson[], hasMore: boolean): MessageBatchListJson {
  return { data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

/** A removed batch as Anthropic answers its DELETE. */
export function deletedMessageBatchJson(id: string): { id: string; type: 'message_batch_deleted' } {
  return { id, type: 'message_batch_deleted' };
}
