import type { NatsConnection } from 'nats';
import type { Logger } from '@gateway/logger';
import type { UsageEvent, UsageEventOutput } from '@gateway/proto';
import { AcknowledgedSender } from './acknowledged-sender.js';
import { EventQueue, formMessage, type OutgoingEvent } from './outgoing-events.js';
import { decodeUsageEvents } from './usage-codec.js';
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
  /**
   * Where events held too long go while NATS does not take them: metering's RecordUsageEvents at
   * the edge (the same as handOver's `record`). Events held at least handOverAfterMs, never sent or
   * whose attempts failed (not those awaiting an acknowledgement), are passed to it, looked for
   * every quarter of handOverAfterMs (at most every 10 s); those it refuses are held again. Without
   * it, or with handOverAfterMs 0, events are held until NATS takes them (or handOver at shutdown).
   */
  handOverTo?: UsageRecorder;
  handOverAfterMs?: number;
}

/** Meters usage events directly (metering's RecordUsageEvents), within timeoutMs; rejects when it could not. */
export type UsageRecorder = (events: UsageEventOutput[], timeoutMs: number) => Promise<void>;

/** The most events one call to a UsageRecorder carries. */
const HAND_OVER_BATCH = 500;
/** How long a hand-over of held events (not at shutdown) may take. */
const HAND_OVER_TIMEOUT_MS = 10_000;

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
  /** When the first event of `forming` was published (monotonic clock, ms). */
  private formingSince = 0;
  private readonly maxBatch: number;
  private readonly maxQueue: number;
  private readonly metrics: UsagePublisherMetrics;
  private readonly sender: AcknowledgedSender;
  private closed = false;
  /** The hand-over of events held too long under way, if any. */
  private handingOver?: Promise<void>;
  private handOverTimer?: NodeJS.Timeout;
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
    const handOverTo = options.handOverTo;
    const handOverAfterMs = options.handOverAfterMs ?? 0;
    if (handOverTo && handOverAfterMs > 0) {
      this.handOverTimer = setInterval(() => this.handOverHeld(handOverTo, handOverAfterMs), Math.max(50, Math.min(handOverAfterMs / 4, 10_000)));
      this.handOverTimer.unref();
    }
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

  /**
   * How long the oldest event held (queued, to be retried, or awaiting acknowledgement) has been
   * held, in seconds; 0 when none is. Unlike the count, it grows at any rate of traffic: an edge
   * with a single event it cannot publish shows it. Reads every held message: for scrapes, not per
   * request.
   */
  get oldestHeldAgeSeconds(): number {
    const earliest = Math.min(
      this.forming.length > 0 ? this.formingSince : Number.POSITIVE_INFINITY,
      this.queue.earliestHeldSince(),
      this.sender.earliestHeldSince(),
    );
    return Number.isFinite(earliest) ? Math.max(0, (performance.now() - earliest) / 1000) : 0;
  }

  /** Events handed to metering instead of the stream (held too long, or at shutdown), since start. */
  get handedOver(): number {
    return this.metrics.handedOver;
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
      if (this.forming.length === 0) this.formingSince = performance.now();
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
      this.queue.push(formMessage(events, this.formingSince));
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
   * At shutdown, for what flush could not publish (NATS or the stream unavailable): stops publishing
   * for good, as close() does, and hands every event still held to `record` (metering's
   * RecordUsageEvents, which meters each event once by its id), at most maxBatch events a call,
   * until timeoutMs has passed. `record` is given the time left, to bound its call by. Resolves how
   * many events were handed over now; the others (record rejected, or no time left) are dropped
   * (`closed`). Call it whatever the publisher holds: a hand-over of events held too long may be
   * under way, and what it fails to hand over is taken here. An event in flight may also have been stored by the stream, its acknowledgement
   * lost: metering recognises that copy by its event id, whichever of the two comes first.
   */
  async handOver(record: UsageRecorder, timeoutMs: number, maxBatch = HAND_OVER_BATCH): Promise<number> {
    if (this.closed) return 0;
    const deadline = performance.now() + timeoutMs;
    clearInterval(this.handOverTimer);
    // A hand-over of events held too long finishes first: what it could not hand over is held again, and taken here.
    await this.handingOver;
    if (this.closed) return 0;
    this.seal();
    this.closed = true;
    const messages: OutgoingEvent[] = this.sender.takeAll();
    for (let message = this.queue.shift(); message; message = this.queue.shift()) messages.push(message);
    const { handed, left } = await this.deliver(messages, record, deadline, maxBatch);
    const leftEvents = left.reduce((sum, message) => sum + message.count, 0);
    if (leftEvents > 0) this.metrics.drop(left[0]?.eventId, 'closed', leftEvents);
    for (const waiter of this.idleWaiters.splice(0)) waiter();
    return handed;
  }

  /** Hands the events held handOverAfterMs or longer to `record`, unless a hand-over is under way; see UsagePublisherOptions.handOverTo. */
  private handOverHeld(record: UsageRecorder, handOverAfterMs: number): void {
    if (this.handingOver || this.closed) return;
    const heldSince = performance.now() - handOverAfterMs;
    const messages = [...this.sender.takeFailedHeldSince(heldSince), ...this.queue.takeHeldSince(heldSince)];
    if (messages.length === 0) return;
    this.handingOver = this.deliver(messages, record, performance.now() + HAND_OVER_TIMEOUT_MS, HAND_OVER_BATCH)
      .then(({ handed, left }) => {
        this.logger.warn({ handed_over: handed, held_again: left.length }, 'usage events held too long were handed to metering');
        if (left.length === 0) return;
        if (!this.closed) return this.sender.putBack(left);
        // Closed meanwhile (close(), which counted only what it still held): these are dropped too.
        this.metrics.drop(
          left[0]?.eventId,
          'closed',
          left.reduce((sum, message) => sum + message.count, 0),
        );
      })
      .finally(() => {
        this.handingOver = undefined;
        this.notifyIfIdle();
      });
  }

  /**
   * Passes the events of `messages` to `record`, whole messages at a time in calls of at most
   * maxBatch events (a message larger than that alone), until the deadline (monotonic ms) or a
   * call fails; resolves how many events were handed over and the messages left.
   */
  private async deliver(
    messages: OutgoingEvent[],
    record: UsageRecorder,
    deadline: number,
    maxBatch: number,
  ): Promise<{ handed: number; left: OutgoingEvent[] }> {
    const readable: Array<{ message: OutgoingEvent; events: UsageEventOutput[] }> = [];
    for (const message of messages) {
      try {
        readable.push({ message, events: decodeUsageEvents(message.bytes) });
      } catch (error) {
        this.logger.error({ err: error, event_id: message.eventId }, 'a held usage message could not be read back');
        this.metrics.drop(message.eventId, 'malformed', message.count);
      }
    }
    let handed = 0;
    let next = 0;
    while (next < readable.length) {
      const timeLeft = deadline - performance.now();
      if (timeLeft <= 0) break;
      const events: UsageEventOutput[] = [];
      let end = next;
      while (end < readable.length && (events.length === 0 || events.length + readable[end]!.events.length <= maxBatch)) {
        events.push(...readable[end]!.events);
        end += 1;
      }
      try {
        await record(events, timeLeft);
      } catch (error) {
        this.logger.error(
          { err: error, events: readable.slice(next).reduce((sum, entry) => sum + entry.events.length, 0) },
          'held usage events could not be handed over',
        );
        break;
      }
      handed += events.length;
      this.metrics.handedOver += events.length;
      next = end;
    }
    return { handed, left: readable.slice(next).map((entry) => entry.message) };
  }

  /**
   * Stops publishing; events still queued or awaiting acknowledgement are abandoned (flush first)
   * and counted as dropped (`closed`).
   */
  close(): void {
    if (this.closed) return;
    const abandoned = this.pending;
    this.closed = true;
    clearInterval(this.handOverTimer);
    if (abandoned > 0) this.metrics.drop(undefined, 'closed', abandoned);
    this.sender.stop();
    for (const waiter of this.idleWaiters.splice(0)) waiter();
  }

  private notifyIfIdle(): void {
    if (this.idleWaiters.length > 0 && this.pending === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
  }
}
