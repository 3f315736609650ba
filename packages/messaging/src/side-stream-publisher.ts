/**
 * A publisher of one of the request log's side streams (bodies, tool calls): each message once
 * (its event id is the JetStream message id, so a repeat is de-duplicated), in the background:
 * publish() returns at once and never throws. Bounded: messages that would take more than
 * maxPendingBytes waiting for acknowledgements, that arrive while NATS is unreachable, or that
 * JetStream refuses are dropped and counted (`dropped`), never retried: the log loses a row of a
 * side stream, never a request its time.
 */
import type { Logger } from '@gateway/logger';
import type { NatsConnection } from 'nats';

/** What a side-stream publisher holds at most and where it publishes. */
export interface SideStreamPublisherOptions {
  subject: string;
  /** Bytes of encoded messages waiting for JetStream's acknowledgement at most; more are dropped. */
  maxPendingBytes: number;
}

/** How a side stream's message is encoded and named in the logs. */
export interface SideStreamMessageKind<Message> {
  encode(message: Message): Uint8Array;
  /** What a message is, for the log lines (`request bodies`). */
  what: string;
}

/** See the file's comment. */
export class SideStreamPublisher<Message extends { event_id?: string | null }> {
  private pendingBytes = 0;
  private inFlight = new Set<Promise<void>>();
  private connection: NatsConnection | undefined;
  /** Messages published and acknowledged, since start. */
  published = 0;
  /** Messages dropped (buffer full, NATS unreachable, refused), since start. */
  dropped = 0;

  constructor(
    nats: Promise<NatsConnection> | NatsConnection,
    private readonly logger: Logger,
    private readonly options: SideStreamPublisherOptions,
    private readonly kind: SideStreamMessageKind<Message>,
  ) {
    void Promise.resolve(nats)
      .then((connection) => {
        this.connection = connection;
      })
      .catch(() => undefined);
  }

  /** Sends a message in the background; see the file's comment. */
  publish(message: Message): void {
    const connection = this.connection;
    if (!connection || connection.isClosed()) {
      this.dropped += 1;
      return;
    }
    let payload: Uint8Array;
    try {
      payload = this.kind.encode(message);
    } catch (error) {
      this.dropped += 1;
      this.logger.warn({ err: error, event_id: message.event_id }, `${this.kind.what} could not be encoded; dropped`);
      return;
    }
    if (this.pendingBytes + payload.length > this.options.maxPendingBytes) {
      this.dropped += 1;
      return;
    }
    this.pendingBytes += payload.length;
    const sent = connection
      .jetstream()
      .publish(this.options.subject, payload, { msgID: message.event_id ?? undefined, timeout: 5_000 })
      .then(
        () => {
          this.published += 1;
        },
        (error: unknown) => {
          this.dropped += 1;
          this.logger.warn({ err: { message: (error as Error).message }, event_id: message.event_id }, `${this.kind.what} not stored by JetStream; dropped`);
        },
      )
      .finally(() => {
        this.pendingBytes -= payload.length;
        this.inFlight.delete(sent);
      });
    this.inFlight.add(sent);
  }

  /** Waits, at most timeoutMs, for the messages being sent. */
  async flush(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }
}
