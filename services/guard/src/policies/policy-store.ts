/**
 * The policies in Redis, shared by every replica: `<prefix>{policies}` is a hash name -> JSON of a
 * StoredPolicy, `<prefix>{policies}:version` a counter bumped in the same MULTI as each change (one
 * slot, so it is one transaction on a Redis Cluster too). Each replica reads the counter every
 * GUARD_RELOAD_INTERVAL_MS and the hash when it moved, so a change made through any replica is
 * applied by all within that interval, and each listener (the compiled checks, the WatchPolicies
 * streams) hears of it once. The counter is the snapshot's version: every replica pushes the same
 * version for the same policies.
 */
import { GatewayError } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { RedisClient } from '@gateway/redis';
import type { StoredPolicy } from './policy.js';
import { POLICY_NAME_PATTERN } from './policy-validation.js';

/** The policies as last read, with their version. */
export interface PolicySet {
  /** The Redis counter (0 before any change). */
  version: number;
  /** By name, in name order. */
  policies: ReadonlyMap<string, StoredPolicy>;
}

/** At most this many policies: each is a metric label and part of every edge's snapshot. */
export const MAX_POLICIES = 500;

/** The policies in Redis, with the latest set read kept in memory. */
export class PolicyStore {
  private set: PolicySet = { version: -1, policies: new Map() };
  private versionText: string | null | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners: ((set: PolicySet) => void)[] = [];

  constructor(
    private readonly redis: RedisClient,
    private readonly options: { prefix: string; intervalMs: number; logger: Logger },
  ) {}

  private get hashName(): string {
    return `${this.options.prefix}{policies}`;
  }

  private get versionName(): string {
    return `${this.options.prefix}{policies}:version`;
  }

  /** The set as last read; version -1 before the first read. */
  get current(): PolicySet {
    return this.set;
  }

  /** Whether the policies have been read once. */
  get loaded(): boolean {
    return this.set.version >= 0;
  }

  /** Calls `listener` with the new set after each change read. */
  onChange(listener: (set: PolicySet) => void): void {
    this.listeners.push(listener);
  }

  /** Reads the set once, then looks for changes every interval; resolves after the first read (or its failure, logged). */
  async start(): Promise<void> {
    const refresh = () => this.refresh().catch((error: unknown) => this.options.logger.warn({ err: error }, 'reading the guard policies failed; retrying'));
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
    const versionText = await this.redis.get(this.versionName);
    if (versionText === this.versionText && this.loaded) return;
    const hash = await this.redis.hgetall(this.hashName);
    const policies = new Map<string, StoredPolicy>();
    for (const [name, json] of Object.entries(hash).sort(([a], [b]) => a.localeCompare(b))) {
      try {
        policies.set(name, JSON.parse(json) as StoredPolicy);
      } catch (error) {
        this.options.logger.error({ policy: name, err: (error as Error).message }, 'a guard policy cannot be read; it is not applied');
      }
    }
    this.versionText = versionText;
    this.set = { version: Number(versionText ?? 0), policies };
    for (const listener of this.listeners) listener(this.set);
  }

  /** One stored policy, or undefined. */
  async get(name: string): Promise<StoredPolicy | undefined> {
    if (!POLICY_NAME_PATTERN.test(name)) return undefined;
    const json = await this.redis.hget(this.hashName, name);
    return json ? (JSON.parse(json) as StoredPolicy) : undefined;
  }

  /** Every stored policy, by name. */
  async list(): Promise<StoredPolicy[]> {
    const hash = await this.redis.hgetall(this.hashName);
    return Object.values(hash)
      .map((json) => JSON.parse(json) as StoredPolicy)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Stores a validated policy (creating or replacing it) and applies it here at once. */
  async put(policy: StoredPolicy): Promise<void> {
    const exists = (await this.redis.hexists(this.hashName, policy.name)) === 1;
    if (!exists && (await this.redis.hlen(this.hashName)) >= MAX_POLICIES)
      throw GatewayError.of('invalid_request', `The guard holds at most ${MAX_POLICIES} policies: remove one first.`, { param: 'name' });
    await this.redis.multi().hset(this.hashName, policy.name, JSON.stringify(policy)).incr(this.versionName).exec();
    await this.refresh();
  }

  /** Removes a policy; false when there was none. */
  async delete(name: string): Promise<boolean> {
    if (!POLICY_NAME_PATTERN.test(name)) return false;
    const replies = await this.redis.multi().hdel(this.hashName, name).incr(this.versionName).exec();
    await this.refresh();
    return replies?.[0]?.[1] === 1;
  }
}
