import { AckPolicy, DeliverPolicy, nanos, type ConsumerInfo, type JsMsg, type NatsConnection } from 'nats';
import type { Logger } from '@gateway/logger';
import { isNotFound } from './usage-stream.js';

/**
 * Thrown by a handler for a message that can never succeed (an unknown model, a missing field):
 * the consumer terminates it instead of redelivering it, and counts it as poison.
 */
export class PoisonMessageError extends Error {
  /** A stable, low-cardinality reason, used as a metric label. */
  readonly reason: string;

  constructor(reason: string, message: string) {
    super(message);
    this.name = 'PoisonMessageError';
    this.reason = reason;
  }
}

/** What a durable consumer reads and how it treats failures. */
export interface DurableConsumerOptions<Message> {
  stream: string;
  /** The durable name: the consumer's position survives restarts and is shared by replicas. */
  durableName: string;
  filterSubject: string;
  /** Turns bytes into a message; a throw makes the message poison ('undecodable'). */
  decode: (bytes: Uint8Array) => Message;
  /**
   * Handles one message. Resolving acknowledges it, so resolve only once the effect is
   * committed. Throw PoisonMessageError to terminate it, anything else to have it redelivered.
   */
  handle: (message: Message, delivery: JsMsg) => Promise<void>;
  logger: Logger;
  /** Called once per terminated message with its reason, e.g. to count it. */
  onPoison?: (reason: string) => void;
  /**
   * Deliveries before JetStream gives up on a message. With the default backoff that is about
   * three hours of retrying, so a long dependency outage delays metering instead of losing it.
   */
  maxDeliver?: number;
  /**
   * Delays before redelivery, by attempt: used by JetStream when an acknowledgement does not come
   * (a crashed worker) and by us when a handler fails. The last value repeats.
   */
  backoffMs?: number[];
  /** Unacknowledged messages JetStream lets this consumer hold. */
  maxAckPending?: number;
  /** Messages one pull asks for, handled concurrently as they arrive (default 256). */
  batchSize?: number;
}

/** Messages one pull asks for by default. */
export const DEFAULT_BATCH_SIZE = 256;

/** How long one pull waits for messages before it is renewed. */
const PULL_EXPIRES_MS = 5_000;

/** The default redelivery delays; the first is also the time allowed to acknowledge a message. */
export const DEFAULT_BACKOFF_MS = [5_000, 15_000, 30_000, 60_000, 120_000];

/** A consumer that is pulling; stop it on shutdown. */
export interface RunningConsumer {
  /** Stops pulling and resolves once the messages being handled (if any) are acknowledged or handed back. */
  stop(): Promise<void>;
}

/**
 * Creates the durable pull consumer, or updates it to these settings. Explicit acknowledgement:
 * a message is done only when its handler says so.
 */
export async function ensureDurableConsumer(
  nc: NatsConnection,
  options: Pick<DurableConsumerOptions<unknown>, 'stream' | 'durableName' | 'filterSubject' | 'maxDeliver' | 'backoffMs' | 'maxAckPending'>,
): Promise<ConsumerInfo> {
  const manager = await nc.jetstreamManager();
  const backoff = options.backoffMs ?? DEFAULT_BACKOFF_MS;
  const config = {
    durable_name: options.durableName,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: options.filterSubject,
    max_deliver: options.maxDeliver ?? 100,
    // JetStream requires max_deliver to exceed the number of backoff steps; the backoff also
    // replaces ack_wait, which is kept equal to its first step for clarity.
    backoff: backoff.map((ms) => nanos(ms)),
    ack_wait: nanos(backoff[0]),
    max_ack_pending: options.maxAckPending ?? 1_000,
  };
  try {
    await manager.consumers.info(options.stream, options.durableName);
    return await manager.consumers.update(options.stream, options.durableName, config);
  } catch (error) {
    if (!isNotFound(error)) throw error;
    return manager.consumers.add(options.stream, config);
  }
}

/**
 * Ensures the durable consumer and handles its messages. Each pull asks for up to `batchSize`
 * messages and each message is handled as soon as it arrives, concurrently with the others of the
 * pull (handlers must not depend on order; metering's are idempotent per request): one pull
 * request per batch instead of one per message, and the handlers' Redis writes leave together.
 * A handler that resolves acknowledges its message; PoisonMessageError or an undecodable payload
 * terminates it (counted through onPoison); any other failure naks it with a growing delay, and
 * once the pull's messages are settled the loop pauses, so an outage of what the handler writes
 * to is waited out rather than burned through. No message waits in a local buffer: each is handled
 * or handed back on arrival, so none outlives its acknowledgement time unseen.
 */
export async function startDurableConsumer<Message>(nc: NatsConnection, options: DurableConsumerOptions<Message>): Promise<RunningConsumer> {
  const { logger } = options;
  const backoff = options.backoffMs ?? DEFAULT_BACKOFF_MS;
  await ensureDurableConsumer(nc, options);
  const consumer = await nc.jetstream().consumers.get(options.stream, options.durableName);
  let stopping = false;
  let pauseMs = 0;
  let wakeUp: (() => void) | undefined;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      wakeUp = undefined;
    });

  const terminate = (delivery: JsMsg, reason: string, error: unknown) => {
    // No reason on the wire: servers before 2.10.4 do not parse `+TERM <reason>` and would
    // redeliver the message; the reason goes to the log and the counter instead.
    delivery.term();
    options.onPoison?.(reason);
    logger.error({ err: error, reason, subject: delivery.subject, stream_sequence: delivery.seq }, 'poison message terminated');
  };

  /** Handles one delivery; returns the redelivery delay when it failed and should be retried. */
  const handleOne = async (delivery: JsMsg): Promise<number | undefined> => {
    let message: Message;
    try {
      message = options.decode(delivery.data);
    } catch (error) {
      terminate(delivery, 'undecodable', error);
      return undefined;
    }
    try {
      await options.handle(message, delivery);
      delivery.ack();
      return undefined;
    } catch (error) {
      if (error instanceof PoisonMessageError) {
        terminate(delivery, error.reason, error);
        return undefined;
      }
      const attempt = delivery.info.deliveryCount;
      const delayMs = backoff[Math.min(attempt - 1, backoff.length - 1)];
      delivery.nak(delayMs);
      logger.warn({ err: error, stream_sequence: delivery.seq, attempt, redeliver_in_ms: delayMs }, 'message handling failed; will be redelivered');
      return delayMs;
    }
  };

  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  let pull: Awaited<ReturnType<typeof consumer.fetch>> | undefined;
  let handling: Promise<unknown> | undefined;

  /** Handles one pull's messages as they arrive; returns the longest redelivery delay among its failures. */
  const handlePull = async (messages: NonNullable<typeof pull>): Promise<number | undefined> => {
    const handlings: Array<Promise<number | undefined>> = [];
    for await (const delivery of messages) {
      // Handed back untouched so that another replica can take it at once.
      if (stopping) delivery.nak();
      else handlings.push(handleOne(delivery));
    }
    const delays = (await Promise.all(handlings)).filter((delay) => delay !== undefined);
    return delays.length ? Math.max(...delays) : undefined;
  };

  const loop = (async () => {
    while (!stopping) {
      let failedDelayMs: number | undefined;
      try {
        pull = await consumer.fetch({ max_messages: batchSize, expires: PULL_EXPIRES_MS });
        const pulled = handlePull(pull);
        handling = pulled;
        failedDelayMs = await pulled;
      } catch (error) {
        if (stopping) break;
        // NATS unreachable or the consumer gone: keep trying, as the connection does.
        logger.warn({ err: error }, 'fetching messages failed; retrying');
        failedDelayMs = 1_000;
      } finally {
        pull = undefined;
        handling = undefined;
      }
      if (failedDelayMs === undefined) {
        pauseMs = 0;
        continue;
      }
      pauseMs = Math.min(Math.max(pauseMs * 2, 250), 5_000);
      if (!stopping) await pause(pauseMs);
    }
  })().catch((error: unknown) => {
    logger.error({ err: error }, 'consumer loop failed');
  });

  logger.info({ stream: options.stream, durable: options.durableName, subject: options.filterSubject }, 'consumer started');
  return {
    stop: async () => {
      stopping = true;
      wakeUp?.();
      // End the open pull rather than wait for it to expire, then wait for the messages being
      // handled; one that arrives after this is handed back (or redelivered after its ack wait).
      const current = handling;
      pull?.stop();
      await Promise.race([
        loop,
        current?.then(
          () => undefined,
          () => undefined,
        ) ?? Promise.resolve(),
      ]);
    },
  };
}
