/**
 * The counts a UsagePublisher keeps (events queued, acknowledged, sent again, dropped by reason)
 * and the one place an event is dropped. What counts as dropped is part of the delivery contract
 * in proto/gateway/usage/v1/USAGE_DELIVERY.md.
 */
import type { Logger } from '@gateway/logger';

/**
 * Why a usage event was dropped instead of reaching the stream: a bounded set, used as a metric label.
 * - `queue_full`: published while maxQueue events were already held (NATS or the stream unavailable for long).
 * - `closed`: published after close(), or still held when the publisher closed (shutdown before flush finished).
 * - `too_large`: its message exceeds the NATS server's max payload; no retry can make it fit.
 * - `no_event_id`: without an id it cannot be de-duplicated, so it is never sent.
 * - `malformed`: it could not be read or encoded.
 */
export type UsageDropReason = 'queue_full' | 'closed' | 'too_large' | 'no_event_id' | 'malformed';

/** Every drop reason, for exporting each count from zero (an alert on increase() misses a series' first sample). */
export const USAGE_DROP_REASONS: readonly UsageDropReason[] = ['queue_full', 'closed', 'too_large', 'no_event_id', 'malformed'];

/** The counts since start; the publisher's getters read them. */
export class UsagePublisherMetrics {
  /** Events dropped, every reason together. */
  dropped = 0;
  /** Events dropped, by reason; read as a live view. */
  readonly droppedBy: Record<UsageDropReason, number> = { queue_full: 0, closed: 0, too_large: 0, no_event_id: 0, malformed: 0 };
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
