/**
 * The stream of request bodies: a RequestBodies (gateway.request_log.v1) for each request whose
 * key or team has `log_bodies` on, for the request log alone. A stream of its own, beside the usage
 * stream and never in it: bodies are large and optional, and must never take the room the usage
 * stream keeps for billable events. Bounded and lossy on purpose (`discard: old`): when full it
 * forgets its oldest bodies, which only the log would have shown. Published off the request path:
 * a request never waits for its bodies to be stored, and never fails because they were not.
 */
import type { Logger } from '@gateway/logger';
import { messageCodec, type RequestBodies, type RequestBodiesOutput } from '@gateway/proto';
import type { NatsConnection } from 'nats';
import { type SideStreamNames, sideStreamLimits, sideStreamNamesOf } from './side-stream.js';

/** A bodies stream's name and subject. */
export type BodiesNames = SideStreamNames;

/**
 * The bodies stream of a usage stream: `BODIES` and `bodies.v1.request` beside the default USAGE;
 * `<name>_BODIES` and `<name lower-cased>.bodies.v1.request` beside another.
 */
export const bodiesNames: (usageStream?: string) => BodiesNames = sideStreamNamesOf('bodies');

/**
 * The bodies stream's limits by default, for ensureSideStream: a day, and 256 MiB (about 4,000
 * requests at the 64 KiB two bodies may take).
 */
export const BODIES_LIMITS = sideStreamLimits(256 * 1024 * 1024);

const codec = messageCodec<RequestBodies, RequestBodiesOutput>('gateway.request_log.v1.RequestBodies');

/** Encodes a request's bodies as protobuf bytes, the payload on the bodies subject. */
export function encodeRequestBodies(bodies: RequestBodies): Uint8Array {
  return codec.encode(bodies);
}

/** Decodes a request's bodies; throws on bytes that are not one (a poison message). */
export function decodeRequestBodies(bytes: Uint8Array): RequestBodiesOutput {
  return codec.decode(bytes);
}

/** What a bodies publisher holds at most and where it publishes. */
export interface BodiesPublisherOptions {
  subject: string;
  /** Bytes of encoded bodies waiting for JetStream's acknowledgement at most; more are dropped. */
  maxPendingBytes: number;
}

/**
 * Publishes request bodies to JetStream, each once (the event id is the message id), in the
 * background: publish() returns at once and never throws. Bounded: bodies that would take more
 * than maxPendingBytes waiting for acknowledgements, that arrive while NATS is unreachable, or that
 * JetStream refuses are dropped and counted (`dropped`), never retried: the request log loses a
 * body, never a request its time.
 */
export class BodiesPublisher {
  private pendingBytes = 0;
  private inFlight = new Set<Promise<void>>();
  private connection: NatsConnection | undefined;
  /** Bodies published and acknowledged, since start. */
  published = 0;
  /** Bodies dropped (buffer full, NATS unreachable, refused), since start. */
  dropped = 0;

  constructor(
    nats: Promise<NatsConnection> | NatsConnection,
    private readonly logger: Logger,
    private readonly options: BodiesPublisherOptions,
  ) {
    void Promise.resolve(nats)
      .then((connection) => {
        this.connection = connection;
      })
      .catch(() => undefined);
  }

  /** Sends a request's bodies in the background; see the class's comment. */
  publish(bodies: RequestBodies): void {
    const connection = this.connection;
    if (!connection || connection.isClosed()) {
      this.dropped += 1;
      return;
    }
    let payload: Uint8Array;
    try {
      payload = encodeRequestBodies(bodies);
    } catch (error) {
      this.dropped += 1;
      this.logger.warn({ err: error, event_id: bodies.event_id }, 'request bodies could not be encoded; dropped');
      return;
    }
    if (this.pendingBytes + payload.length > this.options.maxPendingBytes) {
      this.dropped += 1;
      return;
    }
    this.pendingBytes += payload.length;
    const sent = connection
      .jetstream()
      .publish(this.options.subject, payload, { msgID: bodies.event_id ?? undefined, timeout: 5_000 })
      .then(
        () => {
          this.published += 1;
        },
        (error: unknown) => {
          this.dropped += 1;
          this.logger.warn({ err: { message: (error as Error).message }, event_id: bodies.event_id }, 'request bodies not stored by JetStream; dropped');
        },
      )
      .finally(() => {
        this.pendingBytes -= payload.length;
        this.inFlight.delete(sent);
      });
    this.inFlight.add(sent);
  }

  /** Waits, at most timeoutMs, for the bodies being sent. */
  async flush(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }
}
