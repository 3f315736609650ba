/**
 * Redis WAIT for many writers at once, bounded so that a master left without a replica (normal for
 * minutes to hours after a failover) never stalls its callers.
 *
 * Why not one WAIT per write: WAIT blocks the connection it is sent on (Redis serves a client's
 * commands in order), and a cluster client has one connection per node. With no replica to answer,
 * every WAIT ran to its timeout, the writes queued behind it ran past the client's command
 * timeout, and metering stopped on that shard until a replica came back.
 *
 * So, per master node: the writers waiting share one WAIT (it covers every write the connection
 * sent before it); a WAIT lasts at most `timeoutMs`, well under the command timeout; and once a
 * node answered with fewer replicas than asked, it is taken as unreplicated for `quietMs` (its
 * writers resolve false at once, without blocking the connection), then asked again.
 */
import calculateSlot from 'cluster-key-slot';
import { isCluster, type RedisClient } from './client.js';

/** How a ReplicaWaiter waits. */
export interface ReplicaWaiterOptions {
  /** Replicas that must have a write; 0 waits for none. */
  replicas: number;
  /** The longest one WAIT blocks its connection (default 200 ms: under createRedis's 500 ms command timeout). */
  timeoutMs?: number;
  /** How long a node that lacked replicas is not asked again (default 5 s). */
  quietMs?: number;
}

interface NodeState {
  /** Writers waiting for the next WAIT, each with a key of theirs on the node. */
  waiting: Array<{ key: string; resolve(replicated: boolean): void; reject(error: unknown): void }>;
  busy: boolean;
  /** Until when (Unix ms) the node is taken as lacking replicas. */
  unreplicatedUntil: number;
}

/** Waits for replicas to have writes, one WAIT per master node at a time. */
export class ReplicaWaiter {
  readonly #client: RedisClient;
  readonly #replicas: number;
  readonly #timeoutMs: number;
  readonly #quietMs: number;
  readonly #nodes = new Map<string, NodeState>();

  constructor(client: RedisClient, options: ReplicaWaiterOptions) {
    this.#client = client;
    this.#replicas = Math.max(0, options.replicas);
    this.#timeoutMs = options.timeoutMs ?? 200;
    this.#quietMs = options.quietMs ?? 5_000;
  }

  /**
   * Resolves true once `replicas` replicas of the master holding `key` have every write this client
   * sent it before the call, false when they did not within the timeout (or the node is known to
   * lack them); rejects when the WAIT failed (the master is gone: the write may be lost with it).
   */
  wait(key: string): Promise<boolean> {
    if (this.#replicas === 0) return Promise.resolve(true);
    const node = this.#nodeOf(key);
    let state = this.#nodes.get(node);
    if (!state) {
      state = { waiting: [], busy: false, unreplicatedUntil: 0 };
      this.#nodes.set(node, state);
    }
    if (Date.now() < state.unreplicatedUntil) return Promise.resolve(false);
    const entry = state;
    return new Promise<boolean>((resolve, reject) => {
      entry.waiting.push({ key, resolve, reject });
      if (!entry.busy) this.#flush(entry);
    });
  }

  /** Sends one WAIT for every writer waiting on a node; those who come meanwhile wait for the next. */
  #flush(state: NodeState): void {
    const batch = state.waiting.splice(0);
    if (batch.length === 0) return;
    state.busy = true;
    // A pipeline goes to the node of its keys; WAIT, which has none, goes along with the EXISTS.
    this.#client
      .pipeline()
      .exists(batch[0]!.key)
      .call('WAIT', String(this.#replicas), String(this.#timeoutMs))
      .exec()
      .then((results) => {
        const [error, acknowledged] = results?.[1] ?? [new Error('no reply to WAIT'), 0];
        if (error) throw error;
        const replicated = Number(acknowledged) >= this.#replicas;
        if (!replicated) state.unreplicatedUntil = Date.now() + this.#quietMs;
        for (const waiter of batch) waiter.resolve(replicated);
      })
      .catch((error: unknown) => {
        for (const waiter of batch) waiter.reject(error);
      })
      .finally(() => {
        state.busy = false;
        if (state.waiting.length === 0) return;
        // Known unreplicated now: the rest need not block the connection.
        if (Date.now() < state.unreplicatedUntil) for (const waiter of state.waiting.splice(0)) waiter.resolve(false);
        else this.#flush(state);
      });
  }

  /** The master holding a key: its address on a cluster (by slot), the one server otherwise. */
  #nodeOf(key: string): string {
    if (!isCluster(this.#client)) return '';
    const slot = calculateSlot(key);
    return (this.#client.slots[slot]?.[0] as string | undefined) ?? `slot:${slot}`;
  }
}
