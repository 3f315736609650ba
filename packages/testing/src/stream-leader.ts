/** Waiting for a replicated JetStream stream to have a leader. */
import { eventually } from './eventually.js';

/** What a stream's info says of its replication group (as nats' StreamInfo has it). */
export interface ClusteredStreamInfo {
  cluster?: { leader?: string };
}

/**
 * Resolves with the stream's info once it names a leader, asking `info` every 200 ms for
 * `timeoutMs`. A failed call is asked again: JetStream's API answers 503 or times out while the
 * stream's group settles, and one answer holds both the leader and the replicas.
 */
export function streamWithLeader<I extends ClusteredStreamInfo>(info: () => Promise<I>, description: string, timeoutMs: number): Promise<I> {
  return eventually(
    async () => {
      const current = await info().catch(() => undefined);
      return current?.cluster?.leader ? current : undefined;
    },
    description,
    timeoutMs,
    200,
  );
}
