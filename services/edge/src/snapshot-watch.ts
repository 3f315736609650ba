/**
 * A server-streamed watch of snapshots (the router's WatchCatalog, the guard's WatchPolicies): each
 * call has a deadline, so the watch is renewed when it expires; a call that ends or fails is opened
 * again with backoff, reset by the next snapshot. The view it feeds keeps the last snapshot
 * meanwhile.
 */
import type { Logger } from '@gateway/logger';
import { SingleTimeout } from '@gateway/messaging';
import { ExponentialBackoff, noJitterGenerator, type IBackoff } from 'cockatiel';

/** Reconnection delays of a watch: 100 ms doubling to at most 2 s, with no jitter. */
const RECONNECT_BACKOFF = new ExponentialBackoff({ initialDelay: 100, maxDelay: 2_000, exponent: 2, generator: noJitterGenerator });

/** gRPC's DEADLINE_EXCEEDED: a watch's own deadline, renewed without a warning. */
const DEADLINE_EXCEEDED = 4;

/** One server-streamed call of a watch, as a gRPC client returns it. */
export interface WatchCall<Snapshot> {
  on(event: 'data', listener: (snapshot: Snapshot) => void): unknown;
  on(event: 'error', listener: (error: Error & { code?: number }) => void): unknown;
  on(event: 'close' | 'end', listener: () => void): unknown;
  cancel(): void;
}

/** What a watch opens, feeds and names in its warnings. */
export interface SnapshotWatchOptions<Snapshot> {
  /** Opens one call of the watch, with its deadline. */
  open(deadline: number): WatchCall<Snapshot>;
  /** Takes each snapshot. */
  apply(snapshot: Snapshot): void;
  logger: Logger;
  /** What is watched, for the log (`catalog`, `policy`). */
  name: string;
  /** How long one call lasts before it is renewed. */
  deadlineMs: number;
}

/** One watch: start() opens it, stop() ends it for good. */
export class SnapshotWatch<Snapshot> {
  private call: WatchCall<Snapshot> | undefined;
  private readonly retryTimer = new SingleTimeout(() => this.start());
  private stopped = false;
  /** The reconnection backoff since the last snapshot arrived; undefined when connected. */
  private backoff: IBackoff<unknown> | undefined;

  constructor(private readonly options: SnapshotWatchOptions<Snapshot>) {}

  /** Opens the watch. */
  start(): void {
    if (this.stopped) return;
    const call = this.options.open(Date.now() + this.options.deadlineMs);
    this.call = call;
    call.on('data', (snapshot: Snapshot) => {
      this.backoff = undefined;
      this.options.apply(snapshot);
    });
    call.on('error', (error: Error & { code?: number }) => {
      if (!this.stopped && error.code !== DEADLINE_EXCEEDED) this.options.logger.warn({ err: error.message }, `${this.options.name} watch failed; retrying`);
    });
    call.on('close', () => this.scheduleRetry());
    call.on('end', () => this.scheduleRetry());
  }

  private scheduleRetry(): void {
    if (this.stopped || this.retryTimer.pending) return;
    this.backoff = this.backoff ? this.backoff.next(undefined) : RECONNECT_BACKOFF.next();
    this.retryTimer.schedule(this.backoff.duration);
  }

  /** Stops watching. */
  stop(): void {
    this.stopped = true;
    this.retryTimer.cancel();
    this.call?.cancel();
  }
}
