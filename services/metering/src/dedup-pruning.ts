/**
 * The pruning of metering's de-duplication records. Each key's set holds the stream sequence of
 * every event it metered; a record can go once its event is below the durable consumer's ack
 * floor (JetStream never delivers an acknowledged message again) and has been kept for the
 * retention (which covers a publisher that publishes an event again after the stream's duplicate
 * window). Every interval the ack floor is read and remembered; records are pruned up to the
 * newest floor seen at least the retention ago, in every key's set (the keys that meter also prune
 * their own set as they go, up to pruneThrough). Whether the earlier layout's set of the stream
 * may still hold records is read at each prune, so that a deployment that never had it makes no
 * extra lookup per event.
 */
import type { Logger } from '@gateway/logger';
import type { NatsConnection } from '@gateway/messaging';
import type { prometheus } from '@gateway/observability';
import type { RedisClient } from '@gateway/redis';
import { legacyDedupKey, pruneMetered } from './usage-store.js';

export interface DedupPruningOptions {
  nc: NatsConnection;
  redis: RedisClient;
  stream: string;
  durableName: string;
  retentionMs: number;
  intervalMs: number;
  logger: Logger;
  /** The records held after the last prune (NaN once a prune fails, until one succeeds). */
  records: prometheus.Gauge;
  /** A prune that failed (Redis or NATS). */
  onError: () => void;
}

export class DedupPruning {
  /** The newest ack floor seen at least the retention ago: records up to it can go (0: none yet). */
  pruneThrough = 0;
  /** Whether the earlier layout's set of this stream may hold records (until a sweep finds it empty). */
  earlierRecords = true;
  /** Ack floors seen, oldest first. */
  private readonly floors: Array<{ atMs: number; sequence: number }> = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: DedupPruningOptions) {}

  /** Reads whether the earlier layout's set exists (assumed so when Redis cannot tell). */
  async readEarlierRecords(): Promise<void> {
    this.earlierRecords = (await this.options.redis.exists(legacyDedupKey(this.options.stream)).catch(() => 1)) === 1;
  }

  /** One prune: reads the ack floor and forgets the records that are done. */
  async prune(): Promise<void> {
    const { nc, redis, stream, durableName, retentionMs } = this.options;
    const info = await (await nc.jetstreamManager()).consumers.info(stream, durableName);
    const now = Date.now();
    const floors = this.floors;
    floors.push({ atMs: now, sequence: info.ack_floor.stream_seq });
    // floors[0] becomes the newest floor seen at least retentionMs ago, when there is one.
    while (floors.length > 1 && floors[1]!.atMs <= now - retentionMs) floors.shift();
    if (floors[0]!.atMs <= now - retentionMs) this.pruneThrough = floors[0]!.sequence;
    this.options.records.set(await pruneMetered(redis, stream, this.pruneThrough));
    this.earlierRecords = (await redis.exists(legacyDedupKey(stream))) === 1;
  }

  /** Prunes every interval until stopped; a failure is counted, logged and retried at the next. */
  schedule(): void {
    this.timer = setTimeout(() => {
      this.prune()
        .catch((error: unknown) => {
          this.options.onError();
          // Not the last count, which would look current: unknown until a prune succeeds again.
          this.options.records.set(Number.NaN);
          this.options.logger.warn({ err: error }, 'pruning de-duplication records failed; retrying at the next interval');
        })
        .finally(() => {
          if (this.timer) this.schedule();
        });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
