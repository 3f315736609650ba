/**
 * How full the usage stream is, from the stream's own state in JetStream:
 * `gateway_usage_stream_bytes`, `gateway_usage_stream_messages` and `gateway_usage_stream_max_bytes`
 * (its USAGE_STREAM_MAX_BYTES). A stream at its max_bytes refuses new events (discard: new), so
 * bytes over max_bytes is how close the edges are to holding, then shedding, usage: the alert
 * UsageStreamNearlyFull reads it. The official NATS exporter reports the bytes too, but not the
 * stream's limit.
 *
 * When the stream cannot be read, the gauges are removed rather than left at their last values, so
 * a NATS outage shows as no data, never as a stream that stopped filling.
 */
import type { Logger } from '@gateway/logger';
import type { NatsConnection } from '@gateway/messaging';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';
import { type RepeatedReading, repeatReading, throttled } from './repeated-reading.js';

/** How often the stream's state is read by default. */
export const DEFAULT_USAGE_STREAM_USE_INTERVAL_MS = 5_000;

/** At most one warning per this long while the stream cannot be read. */
const WARNING_INTERVAL_MS = 60_000;

/** What the stream's use is read from and reported to. */
export interface UsageStreamUseOptions {
  nc: NatsConnection;
  stream: string;
  logger: Logger;
  /** Where the gauges are registered; none, and they are kept but not exported. */
  registry?: prometheus.Registry;
  /** Between two reads; default DEFAULT_USAGE_STREAM_USE_INTERVAL_MS. */
  intervalMs?: number;
}

/** One reading of the stream's use. */
export interface UsageStreamUseReading {
  bytes: number;
  messages: number;
  /** The stream's max_bytes; -1 when it has none. */
  maxBytes: number;
}

/** The reporter, started and stopped with metering; a poll that cannot read the stream resolves undefined (and removes the gauges). */
export type UsageStreamUse = RepeatedReading<UsageStreamUseReading | undefined>;

export function createUsageStreamUse(options: UsageStreamUseOptions): UsageStreamUse {
  const { nc, stream, logger } = options;
  const intervalMs = options.intervalMs ?? DEFAULT_USAGE_STREAM_USE_INTERVAL_MS;
  // Labelled by the stream (one per gateway sharing a NATS) so that a failed read can remove them.
  // biome-ignore format: one metric a line, a table of name, help and labels
  const { bytes, messages, maxBytes } = serviceMetrics(options.registry, {
    bytes: metric.gauge('gateway_usage_stream_bytes', 'Bytes the usage stream holds (on each of its servers).', ['stream']),
    messages: metric.gauge('gateway_usage_stream_messages', 'Messages the usage stream holds.', ['stream']),
    maxBytes: metric.gauge('gateway_usage_stream_max_bytes', "The usage stream's max_bytes (USAGE_STREAM_MAX_BYTES): at it, new usage events are refused and the edges hold them.", ['stream']),
  });
  const warnNow = throttled(WARNING_INTERVAL_MS);

  const poll = async (): Promise<UsageStreamUseReading | undefined> => {
    try {
      const info = await (await nc.jetstreamManager()).streams.info(stream);
      const reading = { bytes: info.state.bytes, messages: info.state.messages, maxBytes: info.config.max_bytes };
      bytes.set({ stream }, reading.bytes);
      messages.set({ stream }, reading.messages);
      maxBytes.set({ stream }, reading.maxBytes);
      return reading;
    } catch (error) {
      bytes.remove({ stream });
      messages.remove({ stream });
      maxBytes.remove({ stream });
      if (warnNow()) {
        logger.warn({ err: error, stream }, 'usage stream state could not be read; its gauges are absent until it can');
      }
      return undefined;
    }
  };

  return repeatReading(poll, intervalMs);
}
