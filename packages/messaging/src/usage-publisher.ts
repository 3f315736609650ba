import { randomUUID } from 'node:crypto';
import { ExponentialBackoff, noJitterGenerator, type IBackoff } from 'cockatiel';
import { createInbox, ErrorCode, Events, headers, type Msg, type MsgHdrs, type NatsConnection, type NatsError, type Subscription } from 'nats';
import type { Logger } from '@gateway/logger';
import type { UsageEvent } from '@gateway/proto';
import { encodeUsageEvent, encodeUsageEventBatch } from './usage-codec.js';
import { USAGE_SUBJECT } from './usage-stream.js';

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

/**
 * The header JetStream de-duplicates on: what `js.publish`'s `msgID` option sets. A copy carrying an
 * id the stream has seen within its duplicate window is acknowledged (`duplicate: true`), not stored.
 */
const MESSAGE_ID_HEADER = 'Nats-Msg-Id';

/** Never check more often than this for expired attempts: a late re-send costs little, a busy timer costs every request. */
const MAX_SWEEP_INTERVAL_MS = 250;

/** One event on its way to the stream. */
interface OutgoingEvent {
  /** The JetStream message id: the event's id, or for a batch an id drawn for the batch. */
  eventId: string;
  /** Encoded once when queued; every attempt sends the same bytes. */
  bytes: Uint8Array;
  /** The usage events it carries: 1, or a UsageEventBatch's. */
  count: number;
  /** Built at the first attempt and reused by every retry, so a retry carries the same message id. */
  headers?: MsgHdrs;
  /** When the current attempt was sent (monotonic clock, ms); meaningful only while in flight. */
  sentAt: number;
}

/** JetStream's answer to a publish: a PubAck on success, an API error otherwise. */
interface PublishAnswer {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
  error?: { code?: number; err_code?: number; description?: string };
}

/**
 * First in, first out, taking from the front in constant time. Array#shift moves every element once
 * the array is large (and an outage can queue 100,000 events), so the front is an index instead.
 */
class EventQueue {
  private items: Array<OutgoingEvent | undefined> = [];
  private head = 0;
  /** The usage events its entries carry. */
  events = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(event: OutgoingEvent): void {
    this.events += event.count;
    this.items.push(event);
  }

  /** Puts an event back before all others: one taken from the front that could not be sent. */
  unshift(event: OutgoingEvent): void {
    this.events += event.count;
    if (this.head > 0) this.items[--this.head] = event;
    else this.items.unshift(event);
  }

  shift(): OutgoingEvent | undefined {
    if (this.head === this.items.length) return undefined;
    const event = this.items[this.head];
    if (event) this.events -= event.count;
    // Released at once so that a sent event's bytes belong to the window alone.
    this.items[this.head] = undefined;
    this.head += 1;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      // Reclaim the taken half; amortised over the events taken, so still constant time each.
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return event;
  }
}

/**
 * The events sent and awaiting their acknowledgement, by the number their reply subject ends with.
 * Every attempt gets a new number, so the late acknowledgement of an attempt already given up on
 * finds nothing and cannot count an event twice. A Map iterates in insertion order, which is send
 * order, so the expired attempts are always its first entries.
 */
class AckWindow {
  private readonly entries = new Map<number, OutgoingEvent>();
  private lastNumber = 0;
  /** The usage events its attempts carry. */
  events = 0;

  get size(): number {
    return this.entries.size;
  }

  /** Records an attempt sent now and returns the number its reply subject must end with. */
  add(event: OutgoingEvent, now: number): number {
    this.lastNumber += 1;
    event.sentAt = now;
    this.events += event.count;
    this.entries.set(this.lastNumber, event);
    return this.lastNumber;
  }

  /** Removes and returns the attempt with this number, or undefined when it is no longer awaited. */
  take(number: number): OutgoingEvent | undefined {
    const event = this.entries.get(number);
    if (event) {
      this.entries.delete(number);
      this.events -= event.count;
    }
    return event;
  }

  /** Removes and returns, oldest first, the attempts sent at or before sentAtOrBefore. */
  takeSentBefore(sentAtOrBefore: number): OutgoingEvent[] {
    const expired: OutgoingEvent[] = [];
    for (const [number, event] of this.entries) {
      if (event.sentAt > sentAtOrBefore) break;
      this.entries.delete(number);
      this.events -= event.count;
      expired.push(event);
    }
    return expired;
  }

  /** Removes and returns every attempt, oldest first. */
  takeAll(): OutgoingEvent[] {
    const all = [...this.entries.values()];
    this.entries.clear();
    this.events = 0;
    return all;
  }
}

const decoder = new TextDecoder();

/**
 * Why a message on the acknowledgement inbox is not a successful acknowledgement, or undefined when
 * it is one (a duplicate included). A string rather than an Error: building an Error and its stack
 * per publish is the cost this publisher exists to avoid.
 */
function acknowledgementFailure(message: Msg): string | undefined {
  // A status without a body, e.g. 503 "no responders" when no stream captures the subject.
  const status = message.headers;
  if (status?.hasError) return status.status;
  let answer: PublishAnswer | null;
  try {
    answer = JSON.parse(decoder.decode(message.data)) as PublishAnswer | null;
  } catch {
    return 'unreadable acknowledgement';
  }
  if (answer?.error) return `${answer.error.code ?? ''} ${answer.error.err_code ?? ''} ${answer.error.description ?? ''}`.trim();
  if (typeof answer?.stream !== 'string' || answer.stream === '') return 'acknowledgement without a stream';
  return undefined;
}

/**
 * Publishes usage events to JetStream without ever blocking or failing the request that produced
 * them, the way other clients' PublishAsync does: asynchronous acknowledgements in a bounded window.
 *
 * The events published in one turn of the event loop go out together as one core NATS message (a
 * UsageEventBatch, or the UsageEvent itself when alone): under load, requests end in bursts, and
 * one message, store and acknowledgement per burst instead of per event is most of what NATS and
 * metering spend on usage. A message carries its id as the JetStream message id (`Nats-Msg-Id`:
 * the event's id, or the batch's), with a reply subject under one private inbox that a single long-lived
 * subscription listens on; JetStream's acknowledgement comes back there. A publish therefore costs
 * one message out and one in, with no per-publish request object, timer or error (which is what
 * `js.publish` builds, and what showed in the edge's profiles). At most maxInFlight events await
 * their acknowledgement; each acknowledgement makes room for the next queued event at once, so the
 * window never waits for a whole batch.
 *
 * An attempt that is refused, or not acknowledged within publishTimeoutMs (found by one sweep timer
 * for the whole publisher), goes back to the front of the queue and is sent again with the same
 * message id: if it had been stored and only its acknowledgement was lost, the stream's duplicate
 * window drops the copy instead of billing twice. While failures continue, sending pauses between
 * rounds with exponential backoff; while NATS is disconnected nothing is sent, and on reconnection
 * everything in flight is sent again at once, since its acknowledgements were addressed to the
 * connection that was lost. `publish` only queues and sends when the window has room; the queue is
 * bounded so an outage costs dropped events (logged and counted), never memory.
 */
export class UsagePublisher {
  private nc?: NatsConnection;
  private subscription?: Subscription;
  /** `<private inbox>.`; an attempt's reply subject is this followed by its number in the window. */
  private replyPrefix = '';
  /** Events not sent yet, in publish order. */
  private readonly queue = new EventQueue();
  /** Events published in this turn of the event loop, sent together once it ends. */
  private forming: UsageEvent[] = [];
  private readonly maxBatch: number;
  /** Events whose attempt failed: sent again before anything in the queue, to keep their place. */
  private readonly retries = new EventQueue();
  private readonly window = new AckWindow();
  private readonly subject: string;
  private readonly maxQueue: number;
  private readonly maxInFlight: number;
  private readonly publishTimeoutMs: number;
  private readonly sweepIntervalMs: number;
  /**
   * The pauses between failed rounds are cockatiel's ExponentialBackoff, but the pausing is ours,
   * not its retry(), which retries one call from its own start: here every attempt in the window
   * shares one pause (a round costs one doubling, not one per event), an acknowledgement or a
   * reconnection starts the pauses over, flush() cuts the current one short, and an attempt has no
   * promise or timer of its own to wrap (what this class exists to avoid). The executor's
   * deployment breaker uses cockatiel the same way.
   */
  private readonly backoffFactory: ExponentialBackoff<number>;
  /** The current or last pause; undefined when the next failure pauses for initialBackoffMs. */
  private backoff?: IBackoff<unknown>;
  private readonly onDrop?: (reason: UsageDropReason) => void;
  private connectionUp = true;
  private closed = false;
  private droppedCount = 0;
  private readonly droppedByReason: Record<UsageDropReason, number> = { queue_full: 0, closed: 0, too_large: 0, no_event_id: 0, malformed: 0 };
  private publishedCount = 0;
  private queuedCount = 0;
  private republishedCount = 0;
  private lastDropLogAt = 0;
  /** When the current or last pause began: failures of attempts sent before it were already paid for. */
  private backoffStartedAt = Number.NEGATIVE_INFINITY;
  private backoffTimer?: NodeJS.Timeout;
  private sweepTimer?: NodeJS.Timeout;
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
    this.subject = options.subject ?? USAGE_SUBJECT;
    this.maxQueue = options.maxQueue ?? 100_000;
    this.maxBatch = Math.max(1, options.maxBatch ?? 64);
    this.maxInFlight = Math.max(1, options.maxInFlight ?? 1024);
    this.publishTimeoutMs = options.publishTimeoutMs ?? 5_000;
    this.sweepIntervalMs = Math.max(1, Math.min(this.publishTimeoutMs / 2, MAX_SWEEP_INTERVAL_MS));
    this.backoffFactory = new ExponentialBackoff({
      initialDelay: options.initialBackoffMs ?? 100,
      maxDelay: options.maxBackoffMs ?? 5_000,
      exponent: 2,
      generator: noJitterGenerator,
    });
    this.onDrop = options.onDrop;
    Promise.resolve(connection).then(
      (nc) => this.attach(nc),
      (error: unknown) => {
        this.logger.error({ err: error }, 'usage publisher has no NATS connection');
      },
    );
  }

  /** Events queued or awaiting acknowledgement. */
  get pending(): number {
    return this.forming.length + this.queue.events + this.retries.events + this.window.events;
  }

  /** Events dropped (queue full, publisher closed, no event id, too large to send), since start. */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Events dropped since start, by reason; a live view, not a copy. */
  get droppedBy(): Readonly<Record<UsageDropReason, number>> {
    return this.droppedByReason;
  }

  /** Events acknowledged by JetStream (duplicates included), since start. */
  get published(): number {
    return this.publishedCount;
  }

  /** Events accepted by publish() to be sent (the dropped ones not included), since start. */
  get queued(): number {
    return this.queuedCount;
  }

  /**
   * Events scheduled to be sent again, since start: their attempt was refused, not acknowledged
   * within publishTimeoutMs, could not be written, or was in flight when the connection was lost.
   * Each counts once per attempt that failed; the stream's de-duplication keeps them billed once.
   */
  get republished(): number {
    return this.republishedCount;
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
        this.drop(event?.event_id, 'closed');
        return;
      }
      if (!event.event_id) {
        this.drop(undefined, 'no_event_id');
        return;
      }
      if (this.pending >= this.maxQueue) {
        this.drop(event.event_id, 'queue_full');
        return;
      }
      this.forming.push(event);
      this.queuedCount += 1;
      if (this.forming.length >= this.maxBatch) this.seal();
      else if (this.forming.length === 1) setImmediate(() => this.seal());
    } catch (error) {
      this.logger.error({ err: error, event_id: event?.event_id }, 'usage event could not be queued');
      this.drop(undefined, 'malformed');
    }
  }

  /**
   * Queues the events formed so far as one message and sends what the window has room for. One
   * event keeps its own id as the message id; a batch gets an id of its own, kept by every retry.
   */
  private seal(): void {
    const events = this.forming;
    if (events.length === 0) return;
    this.forming = [];
    try {
      if (events.length === 1) this.queue.push({ eventId: events[0]!.event_id!, bytes: encodeUsageEvent(events[0]!), count: 1, sentAt: 0 });
      else this.queue.push({ eventId: `batch-${randomUUID()}`, bytes: encodeUsageEventBatch(events), count: events.length, sentAt: 0 });
    } catch (error) {
      this.logger.error({ err: error, events: events.length }, 'usage events could not be encoded');
      this.drop(events[0]?.event_id, 'malformed', events.length);
      return;
    }
    this.pump();
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
        this.endBackoff();
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
    if (abandoned > 0) this.drop(undefined, 'closed', abandoned);
    clearTimeout(this.backoffTimer);
    clearInterval(this.sweepTimer);
    this.backoffTimer = undefined;
    this.sweepTimer = undefined;
    try {
      this.subscription?.unsubscribe();
    } catch {
      // The connection is already closed, and the subscription with it.
    }
    for (const waiter of this.idleWaiters.splice(0)) waiter();
  }

  private attach(nc: NatsConnection): void {
    if (this.closed) return;
    const replyPrefix = `${createInbox()}.`;
    try {
      this.subscription = nc.subscribe(`${replyPrefix}*`, { callback: (error, message) => this.acknowledge(error, message) });
    } catch (error) {
      this.logger.error({ err: error }, 'usage publisher cannot subscribe to its acknowledgements');
      return;
    }
    this.replyPrefix = replyPrefix;
    this.nc = nc;
    void this.followConnection(nc);
    this.pump();
  }

  /**
   * Nothing is sent while the connection is down (nats.js would buffer it, then discard the buffer
   * at its next connection attempt). On reconnection every event in flight is sent again at once:
   * the acknowledgements it awaited were addressed to the connection that was lost.
   */
  private async followConnection(nc: NatsConnection): Promise<void> {
    try {
      for await (const status of nc.status()) {
        if (this.closed) return;
        if (status.type === Events.Disconnect) {
          this.connectionUp = false;
        } else if (status.type === Events.Reconnect) {
          this.connectionUp = true;
          for (const event of this.window.takeAll()) this.retry(event);
          this.backoff = undefined;
          this.endBackoff();
        }
      }
    } catch (error) {
      this.logger.error({ err: error }, 'usage publisher stopped following the NATS connection');
    }
  }

  /**
   * Sends waiting events, failed ones first, while the window has room and sending is not paused.
   * Called whenever room may have appeared: an event queued, an acknowledgement, a sweep, the end
   * of a backoff, a reconnection.
   */
  private pump(): void {
    const nc = this.nc;
    if (!nc || this.closed || !this.connectionUp || this.backoffTimer) return;
    let now = -1;
    while (this.window.size < this.maxInFlight) {
      const event = this.retries.shift() ?? this.queue.shift();
      if (!event) break;
      if (now < 0) now = performance.now();
      if (!event.headers) {
        event.headers = headers();
        event.headers.set(MESSAGE_ID_HEADER, event.eventId);
      }
      const number = this.window.add(event, now);
      try {
        nc.publish(this.subject, event.bytes, { reply: this.replyPrefix + number, headers: event.headers });
      } catch (error) {
        this.window.take(number);
        // No retry can make an oversized event fit; keeping it would block every event behind it.
        if ((error as NatsError).code === ErrorCode.MaxPayloadExceeded) {
          this.drop(event.eventId, 'too_large', event.count);
          continue;
        }
        // Closed or draining connection: keep the event's place and try again after a pause.
        this.retries.unshift(event);
        this.republishedCount += event.count;
        this.failed(now, (error as Error).message);
        break;
      }
    }
    if (this.window.size > 0 && !this.sweepTimer) {
      this.sweepTimer = setInterval(() => this.sweep(), this.sweepIntervalMs);
      this.sweepTimer.unref();
    }
  }

  /** Handles one message on the acknowledgement inbox. Never throws: that would break nats.js's read loop. */
  private acknowledge(error: NatsError | null, message: Msg): void {
    try {
      if (error) {
        this.logger.error({ err: error }, 'usage publisher acknowledgement subscription failed');
        return;
      }
      const event = this.window.take(Number(message.subject.slice(this.replyPrefix.length)));
      // Nothing awaited under this number: the attempt timed out and was sent again, and that
      // attempt's answer is the one that counts.
      if (!event) return;
      const failure = acknowledgementFailure(message);
      if (failure === undefined) {
        this.publishedCount += event.count;
        this.backoff = undefined;
      } else {
        this.retry(event);
        this.failed(event.sentAt, failure);
      }
      this.pump();
      this.notifyIfIdle();
    } catch (caught) {
      this.logger.error({ err: caught }, 'usage publisher could not handle an acknowledgement');
    }
  }

  /**
   * The one timer that finds attempts not acknowledged within publishTimeoutMs, so no attempt needs
   * a timer of its own. It stops itself at the first tick that finds nothing in flight.
   */
  private sweep(): void {
    if (this.window.size === 0) {
      clearInterval(this.sweepTimer);
      this.sweepTimer = undefined;
      return;
    }
    const expired = this.window.takeSentBefore(performance.now() - this.publishTimeoutMs);
    if (expired.length === 0) return;
    for (const event of expired) this.retry(event);
    this.failed(expired[expired.length - 1].sentAt, `no acknowledgement within ${this.publishTimeoutMs} ms`);
    this.pump();
  }

  /**
   * Pauses sending for the current backoff after a failed attempt and doubles it for the next
   * round. The failure of an attempt sent before the current pause began belongs to a round already
   * paid for: an outage costs one doubling per round, not one per event in the window.
   */
  private failed(sentAt: number, reason: string): void {
    if (this.backoffTimer || sentAt < this.backoffStartedAt) return;
    this.backoff = this.backoff ? this.backoff.next(undefined) : this.backoffFactory.next();
    const delayMs = this.backoff.duration;
    this.backoffStartedAt = performance.now();
    this.logger.warn({ reason, pending: this.pending, retry_in_ms: delayMs }, 'usage events not acknowledged; retrying');
    this.backoffTimer = setTimeout(() => {
      this.backoffTimer = undefined;
      this.pump();
    }, delayMs);
    this.backoffTimer.unref();
  }

  private endBackoff(): void {
    clearTimeout(this.backoffTimer);
    this.backoffTimer = undefined;
    this.pump();
  }

  private notifyIfIdle(): void {
    if (this.idleWaiters.length > 0 && this.pending === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
  }

  /** Queues an event whose attempt failed to be sent again, before anything not yet sent. */
  private retry(event: OutgoingEvent): void {
    this.retries.push(event);
    this.republishedCount += event.count;
  }

  private drop(eventId: string | undefined, reason: UsageDropReason, count = 1): void {
    this.droppedCount += count;
    this.droppedByReason[reason] += count;
    for (let dropped = 0; dropped < count; dropped += 1) this.onDrop?.(reason);
    const now = Date.now();
    // One line per second at most: a long outage must not flood the log.
    if (now - this.lastDropLogAt >= 1000) {
      this.lastDropLogAt = now;
      this.logger.error({ event_id: eventId, reason, dropped_total: this.droppedCount }, 'usage event dropped');
    }
  }
}
