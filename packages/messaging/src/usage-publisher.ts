import type { JetStreamClient, NatsConnection } from 'nats';
import type { Logger } from '@gateway/logger';
import type { UsageEvent } from '@gateway/proto';
import { encodeUsageEvent } from './usage-codec.js';
import { USAGE_SUBJECT } from './usage-stream.js';

/** Tuning of a UsagePublisher; the defaults suit the edge. */
export interface UsagePublisherOptions {
  /** The subject to publish on; tests use their own. */
  subject?: string;
  /** Events held while NATS or the stream is unavailable; beyond it new events are dropped. */
  maxQueue?: number;
  /** Publishes awaiting their JetStream acknowledgement at once. */
  maxInFlight?: number;
  /** How long to wait for one acknowledgement before counting the attempt as failed. */
  publishTimeoutMs?: number;
  /** First wait after a failed attempt; doubles up to maxBackoffMs. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Called once per dropped event, e.g. to increment a metric. */
  onDrop?: () => void;
}

interface QueuedEvent {
  eventId: string;
  bytes: Uint8Array;
}

/**
 * Publishes usage events to JetStream without ever blocking or failing the request that produced
 * them. `publish` only queues; a background loop sends with the event id as the JetStream message
 * id, so a retry after a lost acknowledgement is dropped by the stream's duplicate window instead
 * of billing twice. While NATS or the stream is unavailable the loop retries with backoff; the
 * queue is bounded so an outage costs dropped events (logged and counted), never memory.
 */
export class UsagePublisher {
  private js?: JetStreamClient;
  private readonly connected: Promise<unknown>;
  private readonly queue: QueuedEvent[] = [];
  private readonly subject: string;
  private readonly maxQueue: number;
  private readonly maxInFlight: number;
  private readonly publishTimeoutMs: number;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly onDrop?: () => void;
  private inFlight = 0;
  private running = false;
  private closed = false;
  private droppedCount = 0;
  private publishedCount = 0;
  private lastDropLogAt = 0;
  private wakeUp?: () => void;
  private idleWaiters: Array<() => void> = [];

  /**
   * Takes the connection or the promise of one, so that a service can start serving while NATS is
   * still unreachable: events queue until the first connection is made.
   */
  constructor(connection: NatsConnection | Promise<NatsConnection>, private readonly logger: Logger, options: UsagePublisherOptions = {}) {
    this.connected = Promise.resolve(connection).then(
      (nc) => { this.js = nc.jetstream(); },
      (error: unknown) => { this.logger.error({ err: error }, 'usage publisher has no NATS connection'); },
    );
    this.subject = options.subject ?? USAGE_SUBJECT;
    this.maxQueue = options.maxQueue ?? 100_000;
    this.maxInFlight = options.maxInFlight ?? 64;
    this.publishTimeoutMs = options.publishTimeoutMs ?? 5_000;
    this.initialBackoffMs = options.initialBackoffMs ?? 100;
    this.maxBackoffMs = options.maxBackoffMs ?? 5_000;
    this.onDrop = options.onDrop;
  }

  /** Events queued or awaiting acknowledgement. */
  get pending(): number {
    return this.queue.length + this.inFlight;
  }

  /** Events dropped because the queue was full, since start. */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Events acknowledged by JetStream (duplicates included), since start. */
  get published(): number {
    return this.publishedCount;
  }

  /**
   * Queues an event for publishing. Never throws and never waits: usage reporting must not fail
   * or slow the request it describes. An event without an id cannot be de-duplicated and is
   * dropped; so is any event that arrives while the queue is full.
   */
  publish(event: UsageEvent): void {
    try {
      if (this.closed) return this.drop(event, 'publisher closed');
      if (!event.event_id) return this.drop(event, 'event without event_id');
      if (this.queue.length + this.inFlight >= this.maxQueue) return this.drop(event, 'queue full');
      this.queue.push({ eventId: event.event_id, bytes: encodeUsageEvent(event) });
      this.start();
    } catch (error) {
      this.logger.error({ err: error, event_id: event?.event_id }, 'usage event could not be queued');
    }
  }

  /**
   * Resolves when every queued event is acknowledged, or when timeoutMs passes (logging how many
   * are left): call it on shutdown before draining NATS.
   */
  async flush(timeoutMs: number): Promise<void> {
    if (this.pending === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.idleWaiters.push(() => { clearTimeout(timer); resolve(); });
      // Shutting down: retry now rather than after the current backoff.
      this.wakeUp?.();
    });
    if (this.pending > 0) this.logger.error({ pending: this.pending }, 'usage events not published before shutdown');
  }

  /** Stops publishing; events still queued are abandoned (flush first). */
  close(): void {
    this.closed = true;
    this.wakeUp?.();
  }

  private drop(event: UsageEvent, reason: string): void {
    this.droppedCount += 1;
    this.onDrop?.();
    const now = Date.now();
    // One line per second at most: a long outage must not flood the log.
    if (now - this.lastDropLogAt >= 1000) {
      this.lastDropLogAt = now;
      this.logger.error({ event_id: event?.event_id, reason, dropped_total: this.droppedCount }, 'usage event dropped');
    }
  }

  private start(): void {
    if (this.running) return;
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
      if (!this.closed && this.queue.length > 0) this.start();
    });
  }

  private async run(): Promise<void> {
    let backoffMs = this.initialBackoffMs;
    if (!this.js) await this.connected;
    while (!this.closed && this.queue.length > 0 && this.js) {
      const js = this.js;
      const batch = this.queue.splice(0, this.maxInFlight);
      this.inFlight += batch.length;
      const results = await Promise.allSettled(batch.map((item) => js.publish(this.subject, item.bytes, { msgID: item.eventId, timeout: this.publishTimeoutMs })));
      this.inFlight -= batch.length;
      const failed = batch.filter((_, index) => results[index].status === 'rejected');
      this.publishedCount += batch.length - failed.length;
      if (failed.length === 0) {
        backoffMs = this.initialBackoffMs;
        continue;
      }
      // Failed events go back to the front so they keep their place; the stream de-duplicates
      // any that were in fact stored and only lost their acknowledgement.
      this.queue.unshift(...failed);
      const reason = (results.find((result) => result.status === 'rejected') as PromiseRejectedResult).reason as Error;
      this.logger.warn({ err: { message: reason?.message, code: (reason as { code?: string })?.code }, failed: failed.length, pending: this.pending, retry_in_ms: backoffMs }, 'usage events not acknowledged; retrying');
      await this.sleep(backoffMs);
      backoffMs = Math.min(backoffMs * 2, this.maxBackoffMs);
    }
    if (this.pending === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this.wakeUp = undefined; resolve(); }, ms);
      timer.unref();
      this.wakeUp = () => { clearTimeout(timer); this.wakeUp = undefined; resolve(); };
    });
  }
}
