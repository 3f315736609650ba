/**
 * A small set of records that every replica of a service shares and applies within an interval
 * (the guard's policies, the cache's settings): `<name>` is a hash field -> text, `<name>:version`
 * a counter bumped in the same MULTI as each change (one slot, so one transaction on a Redis
 * Cluster too). Each replica reads the counter every interval and the hash when it moved, so a
 * change made through any replica is applied by all within that interval, and each listener hears
 * of it once. The counter is the set's version: every replica shows the same version for the same
 * records.
 */
import type { Logger } from '@gateway/logger';
import type { RedisClient } from './client.js';

/** The records as last read, with their version. */
export interface VersionedSet<Value> {
  /** The Redis counter (0 before any change); -1 before the first read. */
  version: number;
  /** By field, in field order. */
  entries: ReadonlyMap<string, Value>;
}

/** What a VersionedHash reads, and how. */
export interface VersionedHashOptions<Value> {
  /** The hash's key; the counter is `<name>:version`. Give both one hash tag on a Redis Cluster. */
  name: string;
  intervalMs: number;
  logger: Logger;
  /** A field's value from its text; throws for one that cannot be read (logged, left out). */
  parse(field: string, text: string): Value;
  /** What the records are, for the log (`guard policy`, `cache setting`). */
  what: string;
}

/** A MULTI that a change adds its commands to. */
export type HashChange = ReturnType<RedisClient['multi']>;

/** The shared records, with the latest set read kept in memory. */
export class VersionedHash<Value> {
  private set: VersionedSet<Value> = { version: -1, entries: new Map() };
  private versionText: string | null | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners: ((set: VersionedSet<Value>) => void)[] = [];

  constructor(
    private readonly redis: RedisClient,
    private readonly options: VersionedHashOptions<Value>,
  ) {}

  /** The hash's key, for the commands of a change. */
  get name(): string {
    return this.options.name;
  }

  /** The set as last read; version -1 before the first read. */
  get current(): VersionedSet<Value> {
    return this.set;
  }

  /** Whether the set has been read once. */
  get loaded(): boolean {
    return this.set.version >= 0;
  }

  /** Calls `listener` with the new set after each change read. */
  onChange(listener: (set: VersionedSet<Value>) => void): void {
    this.listeners.push(listener);
  }

  /** Reads the set once, then looks for changes every interval; resolves after the first read (or its failure, logged). */
  async start(): Promise<void> {
    const refresh = () =>
      this.refresh().catch((error: unknown) => this.options.logger.warn({ err: error }, `reading the ${this.options.what}s failed; retrying`));
    await refresh();
    this.timer = setInterval(refresh, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops looking for changes. */
  stop(): void {
    clearInterval(this.timer);
  }

  /** Reads the set again when its version moved. */
  async refresh(): Promise<void> {
    const versionText = await this.redis.get(`${this.options.name}:version`);
    if (versionText === this.versionText && this.loaded) return;
    const hash = await this.redis.hgetall(this.options.name);
    const entries = new Map<string, Value>();
    for (const [field, text] of Object.entries(hash).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      try {
        entries.set(field, this.options.parse(field, text));
      } catch (error) {
        this.options.logger.error({ field, err: (error as Error).message }, `a ${this.options.what} cannot be read; it is not applied`);
      }
    }
    this.versionText = versionText;
    this.set = { version: Number(versionText ?? 0), entries };
    for (const listener of this.listeners) listener(this.set);
  }

  /** One field's stored text, or undefined. */
  async read(field: string): Promise<string | undefined> {
    return (await this.redis.hget(this.options.name, field)) ?? undefined;
  }

  /** Every field's stored text. */
  async readAll(): Promise<Record<string, string>> {
    return this.redis.hgetall(this.options.name);
  }

  /** How many fields the hash holds. */
  async size(): Promise<number> {
    return this.redis.hlen(this.options.name);
  }

  /**
   * Applies a change (the commands `build` adds, on this hash or others of its slot) with the
   * version bumped in the same MULTI, then reads the set here at once; resolves the replies of the
   * change's own commands.
   */
  async change(build: (multi: HashChange) => void): Promise<unknown[]> {
    const multi = this.redis.multi();
    build(multi);
    const replies = (await multi.incr(`${this.options.name}:version`).exec()) ?? [];
    const failed = replies.find(([error]) => error);
    if (failed) throw failed[0];
    await this.refresh();
    return replies.slice(0, -1).map(([, reply]) => reply);
  }
}
