import type { NatsConnection } from 'nats';
import type { Logger } from '@gateway/logger';
import type { UsageEvent } from '@gateway/proto';
import { AcknowledgedSender } from './acknowledged-sender.js';
import { EventQueue, formMessage } from './outgoing-events.js';
import { UsagePublisherMetrics, type UsageDropReason, type UsageRefusalReason } from './usage-publisher-metrics.js';
import { USAGE_SUBJECT } from './usage-stream.js';

export { USAGE_DROP_REASONS, USAGE_REFUSAL_REASONS, type UsageDropReason, type UsageRefusalReason } from './usage-publisher-metrics.js';

/** Tuning of a UsagePublisher; the defaults suit the edge. */
export interface UsagePublisherOptions {
  /** The subject to publish on; tests use their own. */
  subject?: string;
  /** The most events one message carries (a UsageEventBatch); default 64. */
  maxBatch?: number;
  /** Events held (queued or awaiting acknowledgement) while NATS or the stream is unavailable; beyond it new events are dropped. */
  maxQueue?: number;
  /** Events sent and awaiting their JetStream acknowledgement at once (the window); the rest wait in the queue. */
  maxInFlight?: number;
  /** How long to wait for one acknowledgement before counting the attempt as failed and sending the event again. */
  publishTimeoutMs?: number;
  /** First pause after a failed attempt; doubles up to maxBackoffMs while failures continue. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Called once per dropped event with why it was dropped; the counts are also kept (droppedBy). */
  onDrop?: (reason: UsageDropReason) => void;
}

/**
 * Publishes usage events to JetStream without ever blocking or failing the request that produced
 * them. The delivery contract (message ids for de-duplication, batching, retries, bounds, what
 * counts as dropped) is written up in proto/gateway/usage/v1/USAGE_DELIVERY.md. Here: the queue and
 * the batching of the events published in one turn of the event loop (outgoing-events.ts), the
 * sending and retrying (acknowledged-sender.ts), the counts (usage-publisher-metrics.ts), and flush
 * and close.
 */
export class UsagePublisher {
  /** Events not sent yet, in publish order. */
  private readonly queue = new EventQueue();
  /** Events published in this turn of the event loop, sent together once it ends. */
  private forming: UsageEvent[] = [];
  private readonly maxBatch: number;
  private readonly maxQueue: number;
  private readonly metrics: UsagePublisherMetrics;
  private readonly sender: AcknowledgedSender;
  private closed = false;
  private idleWaiters: Array<() => void> = [];

  /**
   * Takes the connection or the promise of one, so that a service can start serving while NATS is
   * still unreachable: events queue until the first connection is made.
   */
  constructor(
    connection: NatsConnection | Promise<NatsConnection>,
    private readonly logger: Logger,
    options: UsagePublisherOptions = {},
  ) {
    this.maxQueue = options.maxQueue ?? 100_000;
    this.maxBatch = Math.max(1, options.maxBatch ?? 64);
    this.metrics = new UsagePublisherMetrics(logger, options.onDrop);
    this.sender = new AcknowledgedSender({
      subject: options.subject ?? USAGE_SUBJECT,
      maxInFlight: Math.max(1, options.maxInFlight ?? 1024),
      publishTimeoutMs: options.publishTimeoutMs ?? 5_000,
      initialBackoffMs: options.initialBackoffMs ?? 100,
      maxBackoffMs: options.maxBackoffMs ?? 5_000,
      logger,
      metrics: this.metrics,
      takeQueued: () => this.queue.shift(),
      pending: () => this.pending,
      acknowledged: () => this.notifyIfIdle(),
    });
    Promise.resolve(connection).then(
      (nc) => this.sender.attach(nc),
      (error: unknown) => {
        this.logger.error({ err: error }, 'usage publisher has no NATS connection');
      },
    );
  }

  /** Events queued or awaiting acknowledgement. */
  get pending(): number {
    return this.forming.length + this.queue.events + this.sender.events;
  }

  /** Events dropped (queue full, stream full, publisher closed, no event id, too large to send), since start. */
  get dropped(): number {
    return this.metrics.dropped;
  }

  /** Events dropped since start, by reason; a live view, not a copy. */
  get droppedBy(): Readonly<Record<UsageDropReason, number>> {
    return this.metrics.droppedBy;
  }

  /** Events whose attempt JetStream refused, by reason, once per refused attempt, since start; a live view. */
  get refusedBy(): Readonly<Record<UsageRefusalReason, number>> {
    return this.metrics.refusedBy;
  }

  /** Events acknowledged by JetStream (duplicates included), since start. */
  get published(): number {
    return this.metrics.published;
  }

  /** Events accepted by publish() to be sent (the dropped ones not included), since start. */
  get queued(): number {
    return this.metrics.queued;
  }

  /**
   * Events scheduled to be sent again, since start: their attempt was refused, not acknowledged
   * within publishTimeoutMs, could not be written, or was in flight when the connection was lost.
   * Each counts once per attempt that failed; the stream's de-duplication keeps them billed once.
   */
  get republished(): number {
    return this.metrics.republished;
  }

  /**
   * Queues an event; the events published in one turn of the event loop leave together, in one
   * message (a UsageEventBatch when there are several, up to maxBatch), at the end of that turn,
   * as soon as the window has room. Never throws and never waits: usage reporting must not fail or
   * slow the request it describes. An event without an id cannot be de-duplicated and is dropped;
   * so is any event that arrives while the queue is full.
   */
  publish(event: UsageEvent): void {
    try {
      if (this.closed) {
        this.metrics.drop(event?.event_id, 'closed');
        return;
      }
      if (!event.event_id) {
        this.metrics.drop(undefined, 'no_event_id');
        return;
      }
      if (this.pending >= this.maxQueue) {
        // The hold is spent: shed, saying whether it is the stream refusing for space.
        this.metrics.drop(event.event_id, this.metrics.streamFull ? 'stream_full' : 'queue_full');
        return;
      }
      this.forming.push(event);
      this.metrics.queued += 1;
      if (this.forming.length >= this.maxBatch) this.seal();
      else if (this.forming.length === 1) setImmediate(() => this.seal());
    } catch (error) {
      this.logger.error({ err: error, event_id: event?.event_id }, 'usage event could not be queued');
      this.metrics.drop(undefined, 'malformed');
    }
  }

  /**
   * Queues the events formed so far as one message (see formMessage) and sends what the window
   * has room for.
   */
  private seal(): void {
    const events = this.forming;
    if (events.length === 0) return;
    this.forming = [];
    try {
      this.queue.push(formMessage(events));
    } catch (error) {
      this.logger.error({ err: error, events: events.length }, 'usage events could not be encoded');
      this.metrics.drop(events[0]?.event_id, 'malformed', events.length);
      return;
    }
    this.sender.pump();
  }

  /**
   * Resolves when every queued event is acknowledged, or when timeoutMs passes or the publisher is
   * closed (logging how many are left): call it on shutdown before draining NATS.
   */
  async flush(timeoutMs: number): Promise<void> {
    this.seal();
    if (this.pending === 0) return;
    if (!this.closed) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
        // Shutting down: retry now rather than after the current backoff.
        this.sender.endBackoff();
      });
    }
    if (this.pending > 0) this.logger.error({ pending: this.pending }, 'usage events not published before shutdown');
  }

  /**
   * Stops publishing; events still queued or awaiting acknowledgement are abandoned (flush first)
   * and counted as dropped (`closed`).
   */
  close(): void {
    if (this.closed) return;
    const abandoned = this.pending;
    this.closed = true;
    if (abandoned > 0) this.metrics.drop(undefined, 'closed', abandoned);
    this.sender.stop();
    for (const waiter of this.idleWaiters.splice(0)) waiter();
  }

  private notifyIfIdle(): void {
    if (this.idleWaiters.length > 0 && this.pending === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
  }
}
