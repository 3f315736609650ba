/**
 * The sending half of a UsagePublisher: asynchronous JetStream acknowledgements in a bounded
 * window, the way other clients' PublishAsync works, with retries under the same message id and
 * one backoff for the whole window. The delivery contract (message ids, retries, bounds) is written
 * up in proto/gateway/usage/v1/USAGE_DELIVERY.md; what is here is how, and why it costs so little.
 */
import { ExponentialBackoff, noJitterGenerator, type IBackoff } from 'cockatiel';
import { createInbox, ErrorCode, Events, headers, type Msg, type NatsConnection, type NatsError, type Subscription } from 'nats';
import type { Logger } from '@gateway/logger';
import { AckWindow, EventQueue, type OutgoingEvent } from './outgoing-events.js';
import { SingleTimeout } from './single-timeout.js';
import type { UsagePublisherMetrics, UsageRefusalReason } from './usage-publisher-metrics.js';

/**
 * The header JetStream de-duplicates on: what `js.publish`'s `msgID` option sets. A copy carrying an
 * id the stream has seen within its duplicate window is acknowledged (`duplicate: true`), not stored.
 */
const MESSAGE_ID_HEADER = 'Nats-Msg-Id';

/** Never check more often than this for expired attempts: a late re-send costs little, a busy timer costs every request. */
const MAX_SWEEP_INTERVAL_MS = 250;

/** JetStream's answer to a publish: a PubAck on success, an API error otherwise. */
interface PublishAnswer {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
  error?: { code?: number; err_code?: number; description?: string };
}

const decoder = new TextDecoder();

/** A message on the acknowledgement inbox that is not a successful acknowledgement. */
interface AcknowledgementFailure {
  /** Why, for the log. A string rather than an Error: building an Error and its stack per publish is the cost this publisher exists to avoid. */
  detail: string;
  /** Why JetStream refused it, when it answered with a refusal; undefined for an unreadable answer. */
  refusal?: UsageRefusalReason;
}

/**
 * JetStream's store failure (JSStreamStoreFailedF): its description says which limit was hit. With
 * `discard: new`, "maximum bytes exceeded" (or messages) is the stream at its limit, and
 * "insufficient resources" the server's storage exhausted.
 */
const STREAM_STORE_FAILED = 10077;
/**
 * JetStream's "insufficient resources" (JSInsufficientResourcesErr: the server's max_file_store or
 * disk exhausted) and "insufficient storage resources available" (JSStorageResourcesExceededErr).
 */
const STORAGE_EXHAUSTED = new Set([10023, 10047]);

/** Sorts a JetStream API error into a refusal reason. */
function refusalReason(error: NonNullable<PublishAnswer['error']>): UsageRefusalReason {
  const description = error.description ?? '';
  if (STORAGE_EXHAUSTED.has(error.err_code ?? 0) || /insufficient (storage )?resources/i.test(description)) return 'storage_full';
  if (error.err_code === STREAM_STORE_FAILED && /maximum (bytes|messages)/i.test(description)) return 'stream_full';
  return 'other';
}

/**
 * Why a message on the acknowledgement inbox is not a successful acknowledgement, or undefined when
 * it is one (a duplicate included).
 */
function acknowledgementFailure(message: Msg): AcknowledgementFailure | undefined {
  // A status without a body, e.g. 503 "no responders" when no stream captures the subject.
  const status = message.headers;
  if (status?.hasError) return { detail: status.status, refusal: status.code === 503 ? 'no_stream' : 'other' };
  let answer: PublishAnswer | null;
  try {
    answer = JSON.parse(decoder.decode(message.data)) as PublishAnswer | null;
  } catch {
    return { detail: 'unreadable acknowledgement' };
  }
  if (answer?.error) {
    return {
      detail: `${answer.error.code ?? ''} ${answer.error.err_code ?? ''} ${answer.error.description ?? ''}`.trim(),
      refusal: refusalReason(answer.error),
    };
  }
  if (typeof answer?.stream !== 'string' || answer.stream === '') return { detail: 'acknowledgement without a stream' };
  return undefined;
}

/** What an AcknowledgedSender sends to, how, and what it takes its messages from. */
export interface AcknowledgedSenderOptions {
  subject: string;
  maxInFlight: number;
  publishTimeoutMs: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
  logger: Logger;
  metrics: UsagePublisherMetrics;
  /** The next message never sent (failed attempts go first, from the sender's own queue). */
  takeQueued(): OutgoingEvent | undefined;
  /** Every event the publisher holds, for the log. */
  pending(): number;
  /** An acknowledgement was handled (and what it made room for sent): the publisher may be idle now. */
  acknowledged(): void;
}

/**
 * Each message is one core NATS message carrying its id as the JetStream message id, with a reply
 * subject under one private inbox that a single long-lived subscription listens on; JetStream's
 * acknowledgement comes back there. A publish therefore costs one message out and one in, with no
 * per-publish request object, timer or error (which is what `js.publish` builds, and what showed
 * in the edge's profiles). Attempts not acknowledged in time are found by one sweep timer for the
 * whole window.
 */
export class AcknowledgedSender {
  private nc?: NatsConnection;
  private subscription?: Subscription;
  /** `<private inbox>.`; an attempt's reply subject is this followed by its number in the window. */
  private replyPrefix = '';
  /** Events whose attempt failed: sent again before anything in the queue, to keep their place. */
  private readonly retries = new EventQueue();
  private readonly window = new AckWindow();
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
  private connectionUp = true;
  private stopped = false;
  /** When the current or last pause began: failures of attempts sent before it were already paid for. */
  private backoffStartedAt = Number.NEGATIVE_INFINITY;
  /** The end of the current pause: sends resume when it fires. */
  private readonly backoffTimer = new SingleTimeout(() => this.pump());
  private sweepTimer?: NodeJS.Timeout;

  constructor(private readonly options: AcknowledgedSenderOptions) {
    this.sweepIntervalMs = Math.max(1, Math.min(options.publishTimeoutMs / 2, MAX_SWEEP_INTERVAL_MS));
    this.backoffFactory = new ExponentialBackoff({
      initialDelay: options.initialBackoffMs,
      maxDelay: options.maxBackoffMs,
      exponent: 2,
      generator: noJitterGenerator,
    });
  }

  /** Events whose attempt failed and those awaiting their acknowledgement. */
  get events(): number {
    return this.retries.events + this.window.events;
  }

  /** The earliest heldSince of the events it holds (failed, or awaiting acknowledgement); Infinity for none. */
  earliestHeldSince(): number {
    return Math.min(this.retries.earliestHeldSince(), this.window.earliestHeldSince());
  }

  /** Removes the failed events held since heldSince or before (those in flight stay: they are being answered). */
  takeFailedHeldSince(heldSince: number): OutgoingEvent[] {
    return this.retries.takeHeldSince(heldSince);
  }

  /** Takes back events taken from it whose hand-over failed: sent again before anything not yet sent. */
  putBack(events: readonly OutgoingEvent[]): void {
    for (const event of events) this.retries.push(event);
    this.pump();
  }

  /** Stops sending and removes every event it holds, failed ones first, then those in flight (oldest first). */
  takeAll(): OutgoingEvent[] {
    this.stop();
    const taken: OutgoingEvent[] = [];
    for (let event = this.retries.shift(); event; event = this.retries.shift()) taken.push(event);
    taken.push(...this.window.takeAll());
    return taken;
  }

  /** Starts sending on a connection: subscribes to the acknowledgement inbox and follows the connection's status. */
  attach(nc: NatsConnection): void {
    if (this.stopped) return;
    const replyPrefix = `${createInbox()}.`;
    try {
      this.subscription = nc.subscribe(`${replyPrefix}*`, { callback: (error, message) => this.acknowledge(error, message) });
    } catch (error) {
      this.options.logger.error({ err: error }, 'usage publisher cannot subscribe to its acknowledgements');
      return;
    }
    this.replyPrefix = replyPrefix;
    this.nc = nc;
    void this.followConnection(nc);
    this.pump();
  }

  /** Stops sending for good: no timer and no subscription is left behind. */
  stop(): void {
    this.stopped = true;
    this.backoffTimer.cancel();
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    try {
      this.subscription?.unsubscribe();
    } catch {
      // The connection is already closed, and the subscription with it.
    }
  }

  /**
   * Nothing is sent while the connection is down (nats.js would buffer it, then discard the buffer
   * at its next connection attempt). On reconnection every event in flight is sent again at once:
   * the acknowledgements it awaited were addressed to the connection that was lost.
   */
  private async followConnection(nc: NatsConnection): Promise<void> {
    try {
      for await (const status of nc.status()) {
        if (this.stopped) return;
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
      this.options.logger.error({ err: error }, 'usage publisher stopped following the NATS connection');
    }
  }

  /**
   * Sends waiting events, failed ones first, while the window has room and sending is not paused.
   * Called whenever room may have appeared: an event queued, an acknowledgement, a sweep, the end
   * of a backoff, a reconnection.
   */
  pump(): void {
    const nc = this.nc;
    if (!nc || this.stopped || !this.connectionUp || this.backoffTimer.pending) return;
    let now = -1;
    while (this.window.size < this.options.maxInFlight) {
      const event = this.retries.shift() ?? this.options.takeQueued();
      if (!event) break;
      if (now < 0) now = performance.now();
      if (!event.headers) {
        event.headers = headers();
        event.headers.set(MESSAGE_ID_HEADER, event.eventId);
      }
      const number = this.window.add(event, now);
      try {
        nc.publish(this.options.subject, event.bytes, { reply: this.replyPrefix + number, headers: event.headers });
      } catch (error) {
        this.window.take(number);
        // No retry can make an oversized event fit; keeping it would block every event behind it.
        if ((error as NatsError).code === ErrorCode.MaxPayloadExceeded) {
          this.options.metrics.drop(event.eventId, 'too_large', event.count);
          continue;
        }
        // Closed or draining connection: keep the event's place and try again after a pause.
        this.retries.unshift(event);
        this.options.metrics.republished += event.count;
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
        this.options.logger.error({ err: error }, 'usage publisher acknowledgement subscription failed');
        return;
      }
      const event = this.window.take(Number(message.subject.slice(this.replyPrefix.length)));
      // Nothing awaited under this number: the attempt timed out and was sent again, and that
      // attempt's answer is the one that counts.
      if (!event) return;
      const failure = acknowledgementFailure(message);
      const metrics = this.options.metrics;
      if (failure === undefined) {
        metrics.published += event.count;
        metrics.streamFull = false;
        this.backoff = undefined;
      } else {
        if (failure.refusal) {
          metrics.refusedBy[failure.refusal] += event.count;
          const full = failure.refusal === 'stream_full' || failure.refusal === 'storage_full';
          if (full && !metrics.streamFull) {
            this.options.logger.error(
              { reason: failure.refusal, detail: failure.detail, pending: this.options.pending() },
              'usage stream is full and refuses events; they are held and retried, and shed (stream_full) once the hold is full',
            );
          }
          metrics.streamFull = full;
        }
        this.retry(event);
        this.failed(event.sentAt, failure.detail);
      }
      this.pump();
      this.options.acknowledged();
    } catch (caught) {
      this.options.logger.error({ err: caught }, 'usage publisher could not handle an acknowledgement');
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
    const expired = this.window.takeSentBefore(performance.now() - this.options.publishTimeoutMs);
    if (expired.length === 0) return;
    for (const event of expired) this.retry(event);
    this.failed(expired[expired.length - 1].sentAt, `no acknowledgement within ${this.options.publishTimeoutMs} ms`);
    this.pump();
  }

  /**
   * Pauses sending for the current backoff after a failed attempt and doubles it for the next
   * round. The failure of an attempt sent before the current pause began belongs to a round already
   * paid for: an outage costs one doubling per round, not one per event in the window.
   */
  private failed(sentAt: number, reason: string): void {
    if (this.backoffTimer.pending || sentAt < this.backoffStartedAt) return;
    this.backoff = this.backoff ? this.backoff.next(undefined) : this.backoffFactory.next();
    const delayMs = this.backoff.duration;
    this.backoffStartedAt = performance.now();
    this.options.logger.warn({ reason, pending: this.options.pending(), retry_in_ms: delayMs }, 'usage events not acknowledged; retrying');
    this.backoffTimer.schedule(delayMs);
  }

  /** Ends the current pause, if any, and sends what the window has room for. */
  endBackoff(): void {
    this.backoffTimer.cancel();
    this.pump();
  }

  /** Queues an event whose attempt failed to be sent again, before anything not yet sent. */
  private retry(event: OutgoingEvent): void {
    this.retries.push(event);
    this.options.metrics.republished += event.count;
  }
}
