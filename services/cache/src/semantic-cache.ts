/**
 * The semantic side of Lookup and Store. A Store with a semantic key keeps its entry as any other
 * (entries.ts), then its question's vector: as a key of its own in the cache's Redis with the
 * entry's TTL, announced on the stream every replica tails (semantic-keys.ts), and in this
 * replica's index at once. A semantic Lookup searches the index for the nearest kept question of
 * the same group (scope, generations, model, embedding model, context, dimensions) and, when it is
 * at least the threshold near, reads that question's entry; an entry gone from Redis (evicted,
 * expired) is a miss, and its vector is dropped. A Redis that does not answer is UNAVAILABLE.
 */
import { GatewayError } from '@gateway/grpc';
import type { CacheEntry, CacheEntryOutput, SemanticKeyOutput } from '@gateway/proto';
import type { RedisClient } from '@gateway/redis';
import { MIN_SEMANTIC_THRESHOLD } from '@gateway/response-cache';
import { type EntryAddress, type EntryStore, unavailable } from './entries.js';
import type { SemanticIndex } from './semantic-index.js';
import { announcement, groupName, STREAM_MAX_LENGTH, streamKey, vectorKey, vectorValue } from './semantic-keys.js';
import { unitVector } from './vectors.js';

/** A semantic key as checked: its vector read and normalized. */
interface CheckedKey {
  context: string;
  embeddingModel: string;
  bytes: Uint8Array;
  vector: Float32Array;
}

/** The longest context and embedding model a semantic key may name. */
const MAX_NAME_LENGTH = 256;

const invalid = (message: string, param: string) => GatewayError.of('invalid_request', message, { param });

/** A semantic key's parts, or invalid_request naming the one that is not well formed. */
function checkedKey(semantic: SemanticKeyOutput): CheckedKey {
  const { context = '', embedding_model: embeddingModel = '', vector: bytes } = semantic;
  if (!context || context.length > MAX_NAME_LENGTH)
    throw invalid('A semantic key names its context (the hash of the rest of the request).', 'semantic.context');
  if (!embeddingModel || embeddingModel.length > MAX_NAME_LENGTH)
    throw invalid('A semantic key names the embedding model of its vector.', 'semantic.embedding_model');
  const vector = bytes && unitVector(bytes);
  if (!bytes || !vector) throw invalid('A semantic vector is little-endian float32s, finite, not all zero.', 'semantic.vector');
  return { context, embeddingModel, bytes, vector };
}

/** Semantic lookups and stores. */
export class SemanticCache {
  constructor(
    private readonly redis: RedisClient,
    private readonly entries: EntryStore,
    private readonly index: SemanticIndex,
    private readonly prefix: string,
  ) {}

  /** The group of an address and key under the generations given. */
  private group(address: Omit<EntryAddress, 'key'>, key: CheckedKey, generations: string): string {
    return groupName({ ...address, generations, embeddingModel: key.embeddingModel, context: key.context, dimensions: key.vector.length });
  }

  /**
   * The entry of the kept question nearest this one in its group, with its similarity, when that
   * is at least `threshold`; undefined for a miss.
   */
  async lookup(
    address: Omit<EntryAddress, 'key'>,
    semantic: SemanticKeyOutput,
    threshold: number,
  ): Promise<{ entry: CacheEntryOutput; similarity: number } | undefined> {
    const key = checkedKey(semantic);
    if (!(threshold >= MIN_SEMANTIC_THRESHOLD && threshold <= 1))
      throw invalid(`A semantic lookup's threshold is a cosine similarity from ${MIN_SEMANTIC_THRESHOLD} to 1.`, 'threshold');
    // As an exact lookup would be: what the index holds is no answer without its entry.
    if (this.redis.status !== 'ready') throw unavailable(new Error('not connected'));
    const generations = this.entries.generations(address);
    const group = this.group(address, key, generations);
    const near = this.index.nearest(group, key.vector);
    if (!near || near.similarity < threshold) return undefined;
    const entry = await this.entries.lookup({ ...address, key: near.key }, generations);
    if (entry) return { entry, similarity: Math.min(1, near.similarity) };
    // Evicted or expired: its vector answers nothing any more, here or on another replica's rebuild.
    this.index.remove(group, near.key);
    this.redis.unlink(vectorKey(this.prefix, group, near.key)).catch(() => {});
    return undefined;
  }

  /**
   * Keeps an entry (entries.ts) and, once kept, its question's vector: in Redis for the entry's
   * TTL, announced to every replica, and in this replica's index.
   */
  async store(address: EntryAddress, entry: CacheEntry, ttlSeconds: number, semantic: SemanticKeyOutput): ReturnType<EntryStore['store']> {
    const key = checkedKey(semantic);
    const generations = this.entries.generations(address);
    const result = await this.entries.store(address, entry, ttlSeconds, generations);
    if (result.result !== 'stored') return result;
    const group = this.group(address, key, generations);
    const storedAtMs = Date.now();
    const expiresAtMs = storedAtMs + ttlSeconds * 1_000;
    const value = vectorValue(storedAtMs, key.bytes);
    await Promise.all([
      this.redis.set(vectorKey(this.prefix, group, address.key), value, 'PX', ttlSeconds * 1_000),
      this.redis.xadd(streamKey(this.prefix), 'MAXLEN', '~', STREAM_MAX_LENGTH, '*', ...announcement(group, address.key, value, expiresAtMs)),
    ]).catch((error: unknown) => {
      throw unavailable(error);
    });
    this.index.add({ group, key: address.key, vector: key.vector, storedAtMs, expiresAtMs });
    return result;
  }
}
