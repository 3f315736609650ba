/**
 * Which Redis masters are full: over their maxmemory, by Redis's own measure (used memory without
 * the replication and AOF buffers), on a policy that does not evict. Redis refuses a command that
 * adds data to a full server, but lets a Lua script that has already written write on past
 * maxmemory (so that a script is never cut half way), and the gateway's decision script begins by
 * pruning its window: left alone it would go on writing past maxmemory until the machine's memory
 * ran out. Auth reads this before each decision and refuses it (UNAVAILABLE: the edge answers
 * 503 with Retry-After) while the master of the key's slot is full, so maxmemory is the ceiling it
 * is meant to be; the watch reads again every interval, so raising maxmemory (or freeing memory)
 * lets requests through again within an interval, without a restart.
 */
import calculateSlot from 'cluster-key-slot';
import type { Logger } from '@gateway/logger';
import { NO_EVICTION, readMemoryOfMasters, type RedisMemory } from './eviction-policy.js';
import { isCluster, type RedisClient } from './client.js';

/** How often a watch reads every master's memory unless told otherwise: every second. */
export const DEFAULT_MEMORY_WATCH_INTERVAL_MS = 1_000;

/** Whether one server, as read, refuses writes for want of memory. */
export function isFull(memory: RedisMemory): boolean {
  if (memory.maxBytes === undefined || memory.maxBytes <= 0 || memory.usedBytes === undefined) return false;
  // An evicting policy makes room instead of refusing (the state Redis must not have one).
  if (memory.policy !== undefined && memory.policy !== NO_EVICTION) return false;
  return memory.usedBytes - (memory.notCountedBytes ?? 0) > memory.maxBytes;
}

/** Options of a RedisMemoryWatch. */
export interface RedisMemoryWatchOptions {
  logger: Logger;
  intervalMs?: number;
}

/** Reads every master's memory every interval and says whether the master of a key is full. */
export class RedisMemoryWatch {
  private full = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly options: RedisMemoryWatchOptions,
  ) {}

  /** Reads once now, then every interval; returns itself. */
  start(): this {
    void this.read();
    this.timer = setInterval(() => void this.read(), this.options.intervalMs ?? DEFAULT_MEMORY_WATCH_INTERVAL_MS);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * One read of every master. A master that cannot be read keeps its last state until it can: a
   * Redis that does not answer fails the commands themselves.
   */
  async read(): Promise<void> {
    try {
      const memories = await readMemoryOfMasters(this.client);
      const full = new Set(memories.filter(isFull).map((memory) => memory.node));
      for (const node of full)
        if (!this.full.has(node)) this.options.logger.warn({ node }, 'Redis is full (over its maxmemory): requests are refused until it has room');
      for (const node of this.full) if (!full.has(node)) this.options.logger.info({ node }, 'Redis has room again: requests are served');
      this.full = full;
    } catch (error) {
      this.options.logger.debug({ err: { message: (error as Error).message } }, "reading Redis's memory failed");
    }
  }

  /** Whether any master is full, as of the latest read: when not, no key's master is (a cheap first test). */
  get anyFull(): boolean {
    return this.full.size > 0;
  }

  /** Whether the master that holds `key` is full, as of the latest read. */
  isFullFor(key: string): boolean {
    if (this.full.size === 0) return false;
    if (!isCluster(this.client)) return true;
    const node = this.client.slots[calculateSlot(key)]?.[0];
    return node !== undefined && this.full.has(node);
  }
}
