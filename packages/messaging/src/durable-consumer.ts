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
  /** Messages handled at once at most, across pulls (default twice batchSize; keep it under maxAckPending). */
  maxInFlight?: number;
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
 * The next pull does not wait for the messages of the last one: up to `maxInFlight` are handled at
 * once, so a message that is slow (a store shard failing over) holds back none of the others.
 * A handler that resolves acknowledges its message; PoisonMessageError or an undecodable payload
 * terminates it (counted through onPoison); any other failure naks it with a growing delay, and
 * when every message since the last pull failed the loop pauses, so an outage of what the handler
 * writes to is waited out rather than burned through. No message waits in a local buffer: each is
 * handled or handed back on arrival, so none outlives its acknowledgement time unseen.
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
  const maxInFlight = Math.max(1, options.maxInFlight ?? 2 * batchSize);
  let pull: Awaited<ReturnType<typeof consumer.fetch>> | undefined;
  /** The messages being handled: pulling goes on while they run, up to maxInFlight. */
  const handlings = new Set<Promise<void>>();
  let slotFreed: (() => void) | undefined;
  // Outcomes since the loop last looked: it pauses only when messages failed and none succeeded.
  let succeeded = 0;
  let failed = 0;

  const track = (delivery: JsMsg) => {
    const handling: Promise<void> = handleOne(delivery)
      .then((delayMs) => {
        if (delayMs === undefined) succeeded += 1;
        else failed += 1;
      })
      .finally(() => {
        handlings.delete(handling);
        slotFreed?.();
      });
    handlings.add(handling);
  };

  const loop = (async () => {
    while (!stopping) {
      if (handlings.size >= maxInFlight) {
        await new Promise<void>((resolve) => {
          slotFreed = resolve;
        });
        slotFreed = undefined;
        continue;
      }
      let fetchFailed = false;
      try {
        pull = await consumer.fetch({ max_messages: Math.min(batchSize, maxInFlight - handlings.size), expires: PULL_EXPIRES_MS });
        for await (const delivery of pull) {
          // Handed back untouched so that another replica can take it at once.
          if (stopping) delivery.nak();
          else track(delivery);
        }
      } catch (error) {
        if (stopping) break;
        // NATS unreachable or the consumer gone: keep trying, as the connection does.
        logger.warn({ err: error }, 'fetching messages failed; retrying');
        fetchFailed = true;
      } finally {
        pull = undefined;
      }
      // A message that fails (one shard of the store down, a WAIT that failed) is handed back with
      // its delay and the others go on: one slow or failing shard never holds back the rest. Only
      // when everything fails (the store, or NATS, down) does pulling pause, growing to 5 s, so
      // that an outage is waited out rather than burned through.
      const allFailed = fetchFailed || (failed > 0 && succeeded === 0);
      succeeded = 0;
      failed = 0;
      if (!allFailed) {
        pauseMs = 0;
        continue;
      }
      pauseMs = Math.min(Math.max(pauseMs * 2, fetchFailed ? 1_000 : 250), 5_000);
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
      slotFreed?.();
      // End the open pull rather than wait for it to expire, then wait for the messages being
      // handled; one that arrives after this is handed back (or redelivered after its ack wait).
      pull?.stop();
      await loop;
      await Promise.all([...handlings]);
    },
  };
}
