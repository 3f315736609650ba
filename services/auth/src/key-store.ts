import type { Redis } from 'ioredis';
import { generateKeyId, generateSecret, hashSecret } from './key-secret.js';
import { isPlanName, type PlanName } from './plans.js';

/** The public facts of a key as stored; never its secret. */
export interface StoredKey {
  key_id: string;
  plan: PlanName;
  name: string;
  created_at_ms: number;
  /** 0 when never used. Updated at most once a minute, so it is precise to a minute. */
  last_used_at_ms: number;
  revoked: boolean;
}

/** A key found by its secret, with the hash that addresses it. */
export interface FoundKey {
  key: StoredKey;
  hash: string;
}

/** Where a key store keeps its data; tests pass a unique prefix. */
export interface KeyStoreOptions {
  /** Prefix of every Redis key; default `auth:`. */
  prefix?: string;
  /** The clock, in Unix milliseconds. */
  now?: () => number;
}

/** Thrown by create when the secret already belongs to a key. */
export class KeyExistsError extends Error {
  constructor() {
    super('A key with this secret already exists.');
    this.name = 'KeyExistsError';
  }
}

/** How often last_used_at_ms may be written per key: once a minute keeps the hot path read-only. */
export const LAST_USED_INTERVAL_MS = 60_000;

// Creates a key only if its secret is new, with its id index and set entry, atomically.
// KEYS: key hash, key-id index, key-id set. ARGV: hash, key id, plan, name, created_at_ms.
const CREATE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
redis.call('HSET', KEYS[1], 'key_id', ARGV[2], 'plan', ARGV[3], 'name', ARGV[4], 'created_at_ms', ARGV[5], 'revoked', '0')
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[2])
return 1
`;

// Sets a field of a key's hash only if the key exists, so an update never creates a partial key.
// KEYS: key hash. ARGV: field, value. Returns the hash after the update, or an empty list.
const UPDATE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGETALL', KEYS[1])
`;

/**
 * API keys in Redis, stored only as the SHA-256 of their secret:
 * `<prefix>key:<sha256>` is a hash {key_id, plan, name, created_at_ms, last_used_at_ms, revoked},
 * `<prefix>key-id:<key_id>` holds the sha256 for admin lookups, and the set `<prefix>key-ids`
 * lists every key id. The gRPC service and the CLI both use this one module.
 */
export class KeyStore {
  private readonly prefix: string;
  private readonly now: () => number;
  private readonly lastUseWrites = new Map<string, number>();

  constructor(private readonly redis: Redis, options: KeyStoreOptions = {}) {
    this.prefix = options.prefix ?? 'auth:';
    this.now = options.now ?? Date.now;
  }

  /**
   * Creates a key. With no secret a random one is drawn; an explicit secret (bootstrap keys) must
   * be well-formed, which the caller checks. Throws KeyExistsError when the secret is taken.
   */
  async create(input: { plan: PlanName; name?: string; secret?: string }): Promise<{ key: StoredKey; secret: string }> {
    const secret = input.secret ?? generateSecret();
    const hash = hashSecret(secret);
    for (;;) {
      const key: StoredKey = { key_id: generateKeyId(), plan: input.plan, name: input.name ?? '', created_at_ms: this.now(), last_used_at_ms: 0, revoked: false };
      const result = await this.redis.eval(CREATE_SCRIPT, 3, this.keyName(hash), this.idName(key.key_id), this.idSetName(), hash, key.key_id, key.plan, key.name, String(key.created_at_ms));
      if (result === 1) return { key, secret };
      if (result === 0) throw new KeyExistsError();
      // -1: a key id collision (1 in 62^16); draw another id.
    }
  }

  /** Finds a key by its secret with exactly one Redis round trip (HGETALL). */
  async findBySecret(secret: string): Promise<FoundKey | undefined> {
    const hash = hashSecret(secret);
    const key = parseStoredKey(await this.redis.hgetall(this.keyName(hash)));
    return key && { key, hash };
  }

  /**
   * Records that a key was used, at most once per LAST_USED_INTERVAL_MS per key, without
   * waiting: the caller's decision never depends on this write. Failures are reported, not thrown.
   */
  recordUse(found: FoundKey, onError: (error: unknown) => void): void {
    const now = this.now();
    const written = Math.max(found.key.last_used_at_ms, this.lastUseWrites.get(found.hash) ?? 0);
    if (now - written < LAST_USED_INTERVAL_MS) return;
    // Bounded memory: the map only saves duplicate writes within a minute, so losing it is harmless.
    if (this.lastUseWrites.size >= 100_000) this.lastUseWrites.clear();
    this.lastUseWrites.set(found.hash, now);
    this.redis.eval(UPDATE_SCRIPT, 1, this.keyName(found.hash), 'last_used_at_ms', String(now)).catch(onError);
  }

  /** The key with this id, or undefined. */
  async get(keyId: string): Promise<StoredKey | undefined> {
    const hash = await this.redis.get(this.idName(keyId));
    return hash ? parseStoredKey(await this.redis.hgetall(this.keyName(hash))) : undefined;
  }

  /** Every key, oldest first. */
  async list(): Promise<StoredKey[]> {
    const ids = await this.redis.smembers(this.idSetName());
    if (ids.length === 0) return [];
    const hashes = await this.redis.mget(ids.map((id) => this.idName(id)));
    const pipeline = this.redis.pipeline();
    for (const hash of hashes) if (hash) pipeline.hgetall(this.keyName(hash));
    const results = (await pipeline.exec()) ?? [];
    const keys: StoredKey[] = [];
    for (const [error, value] of results) {
      if (error) throw error;
      const key = parseStoredKey(value as Record<string, string>);
      if (key) keys.push(key);
    }
    return keys.sort((a, b) => a.created_at_ms - b.created_at_ms || a.key_id.localeCompare(b.key_id));
  }

  /** Revokes a key; returns it, or undefined when no key has this id. Revoking twice is harmless. */
  async revoke(keyId: string): Promise<StoredKey | undefined> {
    return this.update(keyId, 'revoked', '1');
  }

  /** Changes a key's plan; returns it, or undefined when no key has this id. */
  async setPlan(keyId: string, plan: PlanName): Promise<StoredKey | undefined> {
    return this.update(keyId, 'plan', plan);
  }

  private async update(keyId: string, field: string, value: string): Promise<StoredKey | undefined> {
    const hash = await this.redis.get(this.idName(keyId));
    if (!hash) return undefined;
    const flat = (await this.redis.eval(UPDATE_SCRIPT, 1, this.keyName(hash), field, value)) as string[];
    const record: Record<string, string> = {};
    for (let index = 0; index + 1 < flat.length; index += 2) record[flat[index]] = flat[index + 1];
    return parseStoredKey(record);
  }

  private keyName(hash: string): string { return `${this.prefix}key:${hash}`; }
  private idName(keyId: string): string { return `${this.prefix}key-id:${keyId}`; }
  private idSetName(): string { return `${this.prefix}key-ids`; }
}

/**
 * Reads a stored hash; undefined for a missing or incomplete one (no key id, unknown plan), which
 * callers treat as no key at all rather than guessing.
 */
function parseStoredKey(hash: Record<string, string>): StoredKey | undefined {
  if (!hash.key_id || !hash.plan || !isPlanName(hash.plan)) return undefined;
  return {
    key_id: hash.key_id,
    plan: hash.plan,
    name: hash.name ?? '',
    created_at_ms: Number(hash.created_at_ms ?? 0),
    last_used_at_ms: Number(hash.last_used_at_ms ?? 0),
    revoked: hash.revoked === '1',
  };
}
