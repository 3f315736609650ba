/**
 * The cache's shared state in REDIS_URL's Redis (which never evicts), one VersionedHash
 * `<prefix>{cache}`: `settings:<target>` -> JSON of a target's CacheSettings, and
 * `generation:<name>` -> how many times `all`, a scope (`scope:team:<id>`) or a model
 * (`model:<id>`) was purged. An entry's Redis key carries the generations of its scope and model
 * and the global one, so a purge is one increment: the old entries are never found again and age
 * out of the cache's Redis. Every replica reads the state each CACHE_RELOAD_INTERVAL_MS (and the
 * one that changed it at once).
 */
import type { Logger } from '@gateway/logger';
import type { CacheSettingsOutput } from '@gateway/proto';
import { type RedisClient, VersionedHash } from '@gateway/redis';
import { cacheScope, MAX_TARGETS, mergeSettings } from '@gateway/response-cache';
import { GatewayError } from '@gateway/grpc';

const SETTINGS = 'settings:';
const GENERATION = 'generation:';

/** A field of the state: a target's settings, or a generation. */
type StateValue = { settings: CacheSettingsOutput } | { generation: number };

/** The settings and generations, shared by every replica. */
export class CacheState {
  private readonly hash: VersionedHash<StateValue>;

  constructor(redis: RedisClient, options: { prefix: string; intervalMs: number; logger: Logger }) {
    this.hash = new VersionedHash(redis, {
      name: `${options.prefix}{cache}`,
      intervalMs: options.intervalMs,
      logger: options.logger,
      parse: (field, text) => (field.startsWith(GENERATION) ? { generation: Number(text) } : { settings: JSON.parse(text) as CacheSettingsOutput }),
      what: 'cache setting',
    });
  }

  get loaded(): boolean {
    return this.hash.loaded;
  }

  get version(): number {
    return this.hash.current.version;
  }

  start(): Promise<void> {
    return this.hash.start();
  }

  stop(): void {
    this.hash.stop();
  }

  /** Reads the state again now (a one-off reader: the CLI). */
  refresh(): Promise<void> {
    return this.hash.refresh();
  }

  /** Calls `listener` after each change read. */
  onChange(listener: () => void): void {
    this.hash.onChange(listener);
  }

  /** Every target's settings as last read, `global` first, then by target. */
  settings(): CacheSettingsOutput[] {
    const all: CacheSettingsOutput[] = [];
    for (const [field, value] of this.hash.current.entries) if ('settings' in value && field.startsWith(SETTINGS)) all.push(value.settings);
    return all.sort((a, b) => {
      const [x, y] = [a.target ?? '', b.target ?? ''];
      return x === 'global' ? -1 : y === 'global' ? 1 : x < y ? -1 : x > y ? 1 : 0;
    });
  }

  /** A generation as last read (0: never purged). */
  generation(name: string): number {
    const value = this.hash.current.entries.get(GENERATION + name);
    return value && 'generation' in value && Number.isFinite(value.generation) ? value.generation : 0;
  }

  /** One target's settings as stored now, or undefined. */
  async get(target: string): Promise<CacheSettingsOutput | undefined> {
    const text = await this.hash.read(SETTINGS + target);
    return text ? (JSON.parse(text) as CacheSettingsOutput) : undefined;
  }

  /** Stores a target's validated settings, and applies them here at once. */
  async put(settings: CacheSettingsOutput & { target: string }): Promise<void> {
    const field = SETTINGS + settings.target;
    const exists = (await this.hash.read(field)) !== undefined;
    if (!exists && this.settings().length >= MAX_TARGETS)
      throw GatewayError.of('invalid_request', `The cache holds settings for at most ${MAX_TARGETS} targets: remove one first.`, { param: 'target' });
    await this.hash.change((multi) => multi.hset(this.hash.name, field, JSON.stringify(settings)));
  }

  /** Removes a target's settings; false when it had none. */
  async delete(target: string): Promise<boolean> {
    const [removed] = await this.hash.change((multi) => multi.hdel(this.hash.name, SETTINGS + target));
    return removed === 1;
  }

  /** Moves the named generations on, in one step. */
  async purge(names: readonly string[]): Promise<void> {
    await this.hash.change((multi) => {
      for (const name of names) multi.hincrby(this.hash.name, GENERATION + name, 1);
    });
  }

  /** The generations a purge of a team moves: its scope, and its shared group when its settings name one. */
  teamScopes(teamId: string): string[] {
    const byTarget = new Map(this.settings().map((settings) => [settings.target, settings]));
    const scope = mergeSettings([byTarget.get('global'), byTarget.get(`team:${teamId}`)]).scope;
    const scopes = [`team:${teamId}`];
    if (scope.startsWith('shared:')) scopes.push(cacheScope(scope, '', teamId));
    return scopes;
  }
}
