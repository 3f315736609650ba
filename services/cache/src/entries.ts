/**
 * The entries in the cache's own Redis (CACHE_REDIS_URL), which may evict: one string per entry,
 * `<prefix>e:<scope>:<generations>:<model>:<key>`, its value a CacheEntry in protobuf bytes, with
 * the TTL of its settings. The generations (global, scope, model; cache-state.ts) are in the name,
 * so a purge makes the entries it covers unreachable at once, and memory is bounded by the Redis's
 * `maxmemory` and its evicting policy rather than by anything the cache counts. A semantic lookup
 * reads the entry its nearest kept question names (semantic-cache.ts).
 */
import { GatewayError } from '@gateway/grpc';
import { type CacheEntry, type CacheEntryOutput, messageCodec } from '@gateway/proto';
import type { RedisClient } from '@gateway/redis';
import type { CacheState } from './cache-state.js';

const entryCodec = messageCodec<CacheEntry, CacheEntryOutput>('gateway.cache.v1.CacheEntry');

/** Where one request's entry lives. */
export interface EntryAddress {
  scope: string;
  key: string;
  modelId: string;
}

/** A Redis failure as the callers see it: UNAVAILABLE, which the edge takes as a miss. */
export function unavailable(error: unknown): GatewayError {
  return GatewayError.of('service_unavailable', `The cache's Redis did not answer: ${(error as Error).message}`);
}

/** Reads and writes entries. */
export class EntryStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly state: CacheState,
    private readonly options: { prefix: string; maxEntryBytes: number },
  ) {}

  /** The generations of an address's entries as they are now: global, scope, model. */
  generations({ scope, modelId }: Omit<EntryAddress, 'key'>): string {
    const state = this.state;
    return `${state.generation('all')}.${state.generation(`scope:${scope}`)}.${state.generation(`model:${modelId}`)}`;
  }

  /** The Redis key of an entry, with these generations (those of now unless given). */
  private nameOf(address: EntryAddress, generations = this.generations(address)): string {
    return `${this.options.prefix}e:${address.scope}:${generations}:${address.modelId}:${address.key}`;
  }

  /** The entry, or undefined for none; under `generations` when given (a semantic lookup's). */
  async lookup(address: EntryAddress, generations?: string): Promise<CacheEntryOutput | undefined> {
    const bytes = await this.redis.getBuffer(this.nameOf(address, generations)).catch((error: unknown) => {
      throw unavailable(error);
    });
    return bytes ? entryCodec.decode(bytes) : undefined;
  }

  /**
   * Keeps an entry for `ttlSeconds` (under `generations` when given: a semantic store's), resolving
   * its size; `too_large` when it is over the cap (not kept).
   */
  async store(address: EntryAddress, entry: CacheEntry, ttlSeconds: number, generations?: string): Promise<{ result: 'stored' | 'too_large'; bytes: number }> {
    const bytes = entryCodec.encode(entry);
    if (bytes.byteLength > this.options.maxEntryBytes) return { result: 'too_large', bytes: 0 };
    await this.redis
      .set(this.nameOf(address, generations), Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 'EX', ttlSeconds)
      .catch((error: unknown) => {
        throw unavailable(error);
      });
    return { result: 'stored', bytes: bytes.byteLength };
  }
}
