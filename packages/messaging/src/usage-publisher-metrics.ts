/**
 * The counts a UsagePublisher keeps (events queued, acknowledged, sent again, dropped by reason)
 * and the one place an event is dropped. What counts as dropped is part of the delivery contract
 * in proto/gateway/usage/v1/USAGE_DELIVERY.md.
 */
import type { Logger } from '@gateway/logger';

/**
 * Why a usage event was dropped instead of reaching the stream: a bounded set, used as a metric label.
 * - `queue_full`: published while maxQueue events were already held (NATS or the stream unavailable for long).
 * - `stream_full`: published while maxQueue events were already held because the stream (or its
 *   servers' storage) is full and refuses them: the hold is spent and usage is being shed.
 * - `closed`: published after close(), or still held when the publisher closed (shutdown before flush finished).
 * - `too_large`: its message exceeds the NATS server's max payload; no retry can make it fit.
 * - `no_event_id`: without an id it cannot be de-duplicated, so it is never sent.
 * - `malformed`: it could not be read or encoded.
 */
export type UsageDropReason = 'queue_full' | 'stream_full' | 'closed' | 'too_large' | 'no_event_id' | 'malformed';

/** Every drop reason, for exporting each count from zero (an alert on increase() misses a series' first sample). */
export const USAGE_DROP_REASONS: readonly UsageDropReason[] = ['queue_full', 'stream_full', 'closed', 'too_large', 'no_event_id', 'malformed'];

/**
 * Why JetStream refused a publish (answered it with an error rather than storing it): a bounded
 * set, used as a metric label. A refused event is held and sent again, not dropped.
 * - `stream_full`: the stream is at its max_bytes (or max_msgs) and, with `discard: new`, refuses new events.
 * - `storage_full`: the server has no storage left to give (its max_file_store, or the disk).
 * - `no_stream`: no stream captures the subject (503 no responders): not created yet, or deleted.
 * - `other`: any other error (no quorum on a cluster, a server shutting down, ...).
 */
export type UsageRefusalReason = 'stream_full' | 'storage_full' | 'no_stream' | 'other';

/** Every refusal reason, for exporting each count from zero. */
export const USAGE_REFUSAL_REASONS: readonly UsageRefusalReason[] = ['stream_full', 'storage_full', 'no_stream', 'other'];

/** The counts since start; the publisher's getters read them. */
export class UsagePublisherMetrics {
  /** Events dropped, every reason together. */
  dropped = 0;
  /** Events dropped, by reason; read as a live view. */
  readonly droppedBy: Record<UsageDropReason, number> = { queue_full: 0, stream_full: 0, closed: 0, too_large: 0, no_event_id: 0, malformed: 0 };
  /** Events whose attempt JetStream refused, by reason, once per refused attempt; read as a live view. */
  readonly refusedBy: Record<UsageRefusalReason, number> = { stream_full: 0, storage_full: 0, no_stream: 0, other: 0 };
  /**
   * Whether the last answer from JetStream was a refusal for lack of space (stream_full or
   * storage_full) with no acknowledgement since: what makes a full queue shed as `stream_full`.
   */
  streamFull = false;
  /** Events acknowledged by JetStream, duplicates included. */
  published = 0;
  /** Events accepted by publish() to be sent. */
  queued = 0;
  /** Events scheduled to be sent again, once per attempt that failed. */
  republished = 0;
  /** Events handed to metering at shutdown instead of the stream. */
  handedOver = 0;
  #lastDropLogAt = 0;
  readonly #logger: Logger;
  readonly #onDrop: ((reason: UsageDropReason) => void) | undefined;

  constructor(logger: Logger, onDrop?: (reason: UsageDropReason) => void) {
    this.#logger = logger;
    this.#onDrop = onDrop;
  }

  /** Counts `count` events dropped for `reason`, tells onDrop of each, and logs at most once a second. */
  drop(eventId: string | undefined, reason: UsageDropReason, count = 1): void {
    this.dropped += count;
    this.droppedBy[reason] += count;
    for (let dropped = 0; dropped < count; dropped += 1) this.#onDrop?.(reason);
    const now = Date.now();
    // One line per second at most: a long outage must not flood the log.
    if (now - this.#lastDropLogAt >= 1000) {
      this.#lastDropLogAt = now;
      this.#logger.error({ event_id: eventId, reason, dropped_total: this.dropped }, 'usage event dropped');
    }
  }
}
