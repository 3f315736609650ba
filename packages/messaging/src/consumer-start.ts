/**
 * The start of a usage stream consumer (metering, the request log). JetStream may not answer at
 * start (a NATS cluster electing a leader, a server replaced): the consumer waits for it, retrying
 * each step with a growing pause (0.25 s up to 5 s) rather than exiting and leaving usage
 * unconsumed; each failure is logged as a warning, and stopping the consumer cancels the steps
 * still waiting.
 */
import type { Logger } from '@gateway/logger';
import { ExponentialBackoff, handleAll, type RetryPolicy, retry } from 'cockatiel';
import type { NatsConnection, StreamInfo } from 'nats';
import { type DurableConsumerOptions, type RunningConsumer, startDurableConsumer } from './durable-consumer.js';
import { ensureUsageStream, type UsageStreamOptions } from './usage-stream.js';

/** The retried steps of one consumer's start; see the module comment. */
export class ConsumerStart {
  private readonly starting = new AbortController();
  private readonly retries: RetryPolicy;

  /** `failure` is the warning logged at each failed step, with the error's message and the pause before the next try. */
  constructor(
    private readonly nc: NatsConnection,
    private readonly logger: Logger,
    failure: string,
  ) {
    this.retries = retry(handleAll, { maxAttempts: Number.POSITIVE_INFINITY, backoff: new ExponentialBackoff({ initialDelay: 250, maxDelay: 5_000 }) });
    this.retries.onRetry(({ delay, ...outcome }) => {
      const error = 'error' in outcome ? outcome.error : undefined;
      this.logger.warn({ err: error instanceof Error ? { message: error.message } : error, retry_in_ms: Math.round(delay) }, failure);
    });
  }

  /** Runs one step of the start until it succeeds; rejects once the start is cancelled. */
  step<T>(work: () => Promise<T>): Promise<T> {
    return this.retries.execute(work, this.starting.signal);
  }

  /**
   * Creates the usage stream `stream`, or updates it to these settings (see ensureUsageStream),
   * telling the consumer's logger when it keeps more replicas or bytes than asked.
   */
  usageStream(stream: string, settings: Pick<UsageStreamOptions, 'subjects' | 'replicas' | 'maxAgeMs' | 'maxBytes'>): Promise<StreamInfo> {
    const { subjects, replicas, maxAgeMs, maxBytes } = settings;
    return this.step(() => ensureUsageStream(this.nc, { stream, subjects, replicas, maxAgeMs, maxBytes, logger: this.logger }));
  }

  /** Starts a durable consumer (see startDurableConsumer). */
  consumer<Message>(options: DurableConsumerOptions<Message>): Promise<RunningConsumer> {
    return this.step(() => startDurableConsumer(this.nc, options));
  }

  /** Cancels the steps still retrying: the consumer is stopping. */
  cancel(): void {
    this.starting.abort();
  }
}
