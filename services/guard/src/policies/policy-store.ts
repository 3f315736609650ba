/**
 * The policies in Redis, shared by every replica: `<prefix>{policies}` is a hash name -> JSON of a
 * StoredPolicy, kept as @gateway/redis's VersionedHash keeps a set (its version counter bumped with
 * each change, read by every replica each GUARD_RELOAD_INTERVAL_MS), so that each listener (the
 * compiled checks, the WatchPolicies streams) hears of a change once, and every replica pushes the
 * same version for the same policies.
 */
import { GatewayError } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { type RedisClient, VersionedHash } from '@gateway/redis';
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
  private readonly hash: VersionedHash<StoredPolicy>;

  constructor(redis: RedisClient, options: { prefix: string; intervalMs: number; logger: Logger }) {
    this.hash = new VersionedHash(redis, {
      name: `${options.prefix}{policies}`,
      intervalMs: options.intervalMs,
      logger: options.logger,
      parse: (_name, json) => JSON.parse(json) as StoredPolicy,
      what: 'guard policy',
    });
  }

  /** The set as last read; version -1 before the first read. */
  get current(): PolicySet {
    const { version, entries } = this.hash.current;
    return { version, policies: entries };
  }

  /** Whether the policies have been read once. */
  get loaded(): boolean {
    return this.hash.loaded;
  }

  /** Calls `listener` with the new set after each change read. */
  onChange(listener: (set: PolicySet) => void): void {
    this.hash.onChange(({ version, entries }) => listener({ version, policies: entries }));
  }

  /** Reads the set once, then looks for changes every interval; resolves after the first read (or its failure, logged). */
  start(): Promise<void> {
    return this.hash.start();
  }

  /** Stops looking for changes. */
  stop(): void {
    this.hash.stop();
  }

  /** Reads the set again when its version moved. */
  refresh(): Promise<void> {
    return this.hash.refresh();
  }

  /** One stored policy, or undefined. */
  async get(name: string): Promise<StoredPolicy | undefined> {
    if (!POLICY_NAME_PATTERN.test(name)) return undefined;
    const json = await this.hash.read(name);
    return json ? (JSON.parse(json) as StoredPolicy) : undefined;
  }

  /** Every stored policy, by name. */
  async list(): Promise<StoredPolicy[]> {
    return Object.values(await this.hash.readAll())
      .map((json) => JSON.parse(json) as StoredPolicy)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Stores a validated policy (creating or replacing it) and applies it here at once. */
  async put(policy: StoredPolicy): Promise<void> {
    const exists = (await this.hash.read(policy.name)) !== undefined;
    if (!exists && (await this.hash.size()) >= MAX_POLICIES)
      throw GatewayError.of('invalid_request', `The guard holds at most ${MAX_POLICIES} policies: remove one first.`, { param: 'name' });
    await this.hash.change((multi) => multi.hset(this.hash.name, policy.name, JSON.stringify(policy)));
  }

  /** Removes a policy; false when there was none. */
  async delete(name: string): Promise<boolean> {
    if (!POLICY_NAME_PATTERN.test(name)) return false;
    const [removed] = await this.hash.change((multi) => multi.hdel(this.hash.name, name));
    return removed === 1;
  }
}
