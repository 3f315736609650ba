/**
 * The server side of a snapshot watch (the guard's WatchPolicies, the cache's WatchSettings): the
 * open server-streamed calls, each given the latest snapshot when it opens and every one after it,
 * until its caller cancels or the server ends them at shutdown (the callers reconnect elsewhere).
 */
import type * as grpc from '@grpc/grpc-js';

/** The open watches of one snapshot. */
export class WatchStreams<Snapshot> {
  private readonly calls = new Map<grpc.ServerWritableStream<unknown, Snapshot>, () => void>();
  private latest: Snapshot | undefined;

  /** @param onCount told the number of open watches on every change (a gauge). */
  constructor(private readonly onCount: (count: number) => void = () => {}) {}

  /** How many calls watch. */
  get size(): number {
    return this.calls.size;
  }

  /** Adds a call: it gets the latest snapshot at once (none before the first push). */
  add(call: grpc.ServerWritableStream<unknown, Snapshot>): void {
    const stop = () => {
      this.calls.delete(call);
      this.onCount(this.calls.size);
    };
    this.calls.set(call, stop);
    this.onCount(this.calls.size);
    call.once('cancelled', stop);
    call.once('error', stop);
    call.once('close', stop);
    if (this.latest !== undefined) call.write(this.latest);
  }

  /** Sends a snapshot to every call, and keeps it for the calls still to come. */
  push(snapshot: Snapshot): void {
    this.latest = snapshot;
    for (const call of this.calls.keys()) if (!call.cancelled && call.writable) call.write(snapshot);
  }

  /** Ends every call (shutdown). */
  end(): void {
    for (const [call, stop] of [...this.calls]) {
      stop();
      call.end();
    }
  }
}
