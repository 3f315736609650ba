/**
 * How far metering is behind the usage stream, from the durable consumer's own state in JetStream:
 * `gateway_metering_consumer_pending_messages` (messages not metered yet: not delivered, or
 * delivered and not acknowledged) and `gateway_metering_oldest_unmetered_age_seconds` (how long
 * the oldest of them has been in the stream; 0 when none). Usage not metered is usage not billed
 * yet, and not counted against budgets: these say how late the bill is, where the consumer's own
 * counters only say what it did. While they cannot be read (NATS unreachable) both read NaN, never
 * a last value that looks current, and `gateway_metering_lag_last_read_timestamp_seconds` (when
 * they were last read; 0 before the first read) stops moving: the alert on an unknown lag reads it.
 *
 * Read from JetStream rather than counted here, so the figures are the same whichever replica
 * reports them and include what no replica has pulled yet (one consumer info per poll, plus one
 * stream message read when something is pending).
 */
import type { Logger } from '@gateway/logger';
import { isNotFound, type NatsConnection } from '@gateway/messaging';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';
import { type RepeatedReading, repeatReading, throttled } from './repeated-reading.js';

/** How often the consumer's state is read by default. */
export const DEFAULT_CONSUMER_LAG_INTERVAL_MS = 5_000;

/** What the lag is read from and reported to. */
export interface ConsumerLagOptions {
  nc: NatsConnection;
  stream: string;
  /** The durable consumer metering consumes with. */
  durableName: string;
  logger: Logger;
  /** Where the gauges are registered; none, and they are kept but not exported. */
  registry?: prometheus.Registry;
  /** Between two reads; default DEFAULT_CONSUMER_LAG_INTERVAL_MS. */
  intervalMs?: number;
  /** The wall clock the stream's timestamps are compared with (tests pass their own). */
  now?: () => number;
}

/** One reading of the lag. */
export interface ConsumerLagReading {
  /** Messages not metered yet (num_pending + num_ack_pending). */
  pendingMessages: number;
  /** Age of the oldest message not acknowledged, in seconds; 0 when none is pending. */
  oldestAgeSeconds: number;
}

/**
 * The lag reporter, started and stopped with the consumer: its start reads the lag once (before
 * any message is consumed), its stop leaves the gauges at their last values (the process is
 * stopping with it), and a poll that cannot read the lag resolves undefined (logged).
 */
export type ConsumerLag = RepeatedReading<ConsumerLagReading | undefined>;

/** At most one warning per this long while the lag cannot be read (NATS down for minutes must not flood the log). */
const WARNING_INTERVAL_MS = 60_000;

/**
 * Creates the lag reporter and its three gauges. Before the first read, and after a failed one, the two lag gauges read NaN
 * (unknown: a comparison with NaN is false, so no lag alert fires on a stale figure, and the alert
 * on the last read's age does) and logs a warning at most once a minute.
 */
export function createConsumerLag(options: ConsumerLagOptions): ConsumerLag {
  const { nc, stream, durableName, logger } = options;
  const intervalMs = options.intervalMs ?? DEFAULT_CONSUMER_LAG_INTERVAL_MS;
  const now = options.now ?? Date.now;
  // biome-ignore format: one metric a line, a table of name and help
  const { pending, oldestAge, lastRead } = serviceMetrics(options.registry, {
    pending: metric.gauge('gateway_metering_consumer_pending_messages', 'Usage stream messages not metered yet: not delivered to metering, or delivered and not acknowledged.'),
    oldestAge: metric.gauge('gateway_metering_oldest_unmetered_age_seconds', 'Age of the oldest usage stream message not metered yet (0 when none): how late the bill is.'),
    lastRead: metric.gauge('gateway_metering_lag_last_read_timestamp_seconds', 'When the lag gauges were last read from JetStream (Unix seconds; 0 before the first read). While it stands still the lag is unknown.'),
  });
  // Unknown until the first read: a scrape between the service's start and its first read must not
  // see "nothing pending" on a backlog (the metrics port answers from the first instant of start-up).
  pending.set(Number.NaN);
  oldestAge.set(Number.NaN);
  const warnNow = throttled(WARNING_INTERVAL_MS, now);

  /** When the oldest message not acknowledged was stored: the first one after the ack floor still in the stream. */
  const oldestStoredAt = async (ackFloor: number): Promise<number | undefined> => {
    const manager = await nc.jetstreamManager();
    try {
      return (await manager.streams.getMessage(stream, { seq: ackFloor + 1 })).time.getTime();
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    // Removed since (the stream's age limit, a purge): the oldest one left after it is the oldest not metered.
    const first = (await manager.streams.info(stream)).state.first_seq;
    if (first <= ackFloor + 1) return undefined;
    return (await manager.streams.getMessage(stream, { seq: first })).time.getTime();
  };

  const poll = async (): Promise<ConsumerLagReading | undefined> => {
    try {
      const info = await (await nc.jetstreamManager()).consumers.info(stream, durableName);
      const pendingMessages = info.num_pending + info.num_ack_pending;
      let oldestAgeSeconds = 0;
      if (pendingMessages > 0) {
        const storedAt = await oldestStoredAt(info.ack_floor.stream_seq);
        if (storedAt !== undefined) oldestAgeSeconds = Math.max(0, (now() - storedAt) / 1000);
      }
      pending.set(pendingMessages);
      oldestAge.set(oldestAgeSeconds);
      lastRead.set(now() / 1000);
      return { pendingMessages, oldestAgeSeconds };
    } catch (error) {
      // Before metering's first start there is no durable consumer yet: nothing was ever consumed to be behind on.
      if (isNotFound(error)) {
        pending.set(0);
        oldestAge.set(0);
        return undefined;
      }
      pending.set(Number.NaN);
      oldestAge.set(Number.NaN);
      if (warnNow()) {
        logger.warn({ err: error, stream, durable: durableName }, 'metering lag could not be read; the lag gauges read NaN (unknown) until it can');
      }
      return undefined;
    }
  };

  return repeatReading(poll, intervalMs);
}
