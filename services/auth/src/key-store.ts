import type { Redis } from 'ioredis';
import { generateKeyId, generateSecret, hashSecret } from './key-secret.js';
import { isPlanName, type Limit, type PlanName } from './plans.js';

/** The public facts of a key as stored; never its secret. */
export interface StoredKey {
  key_id: string;
  plan: PlanName;
  name: string;
  created_at_ms: number;
  /** 0 when never used. Updated at most once a minute, so it is precise to a minute. */
  last_used_at_ms: number;
  revoked: boolean;
  /** Replaces the plan's requests per minute for this key; absent: the plan's. */
  requests_per_minute_override?: Limit;
  /** Replaces the plan's tokens per minute for this key; absent: the plan's. */
  tokens_per_minute_override?: Limit;
  /** The key's default routing policy, forwarded to the router; '' for none. */
  routing_policy: string;
  /** Replaces the plan's catalog_fallbacks for this key; absent: the plan's. */
  catalog_fallbacks_override?: boolean;
}

/** What may be set when a key is created; absent overrides mean the plan's limits. */
export interface NewKey {
  plan: PlanName;
  name?: string;
  secret?: string;
  requests_per_minute_override?: Limit;
  tokens_per_minute_override?: Limit;
  routing_policy?: string;
  catalog_fallbacks_override?: boolean;
}

/**
 * Changes to a key; an absent field stays as it is. An override of null removes it (the plan's
 * limit applies again); a routing policy of '' removes it; a catalog fallbacks override of null
 * removes it (the plan's default applies again).
 */
export interface KeyChanges {
  plan?: PlanName;
  name?: string;
  requests_per_minute_override?: Limit | null;
  tokens_per_minute_override?: Limit | null;
  routing_policy?: string;
  catalog_fallbacks_override?: boolean | null;
  revoked?: true;
}

/** Thrown when a value given for a key is invalid; `param` names the field. */
export class KeyInputError extends Error {
  constructor(readonly param: string, message: string) {
    super(message);
    this.name = 'KeyInputError';
  }
}

/** The longest key name accepted. */
export const MAX_KEY_NAME_LENGTH = 200;
/** What a routing policy looks like: a short name the router understands. */
export const ROUTING_POLICY_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;
/** What a public key id looks like. */
export const KEY_ID_PATTERN = /^key_[A-Za-z0-9]{16}$/;

const OVERRIDE_FIELDS = ['requests_per_minute_override', 'tokens_per_minute_override'] as const;

/** Checks the values both the gRPC service and the CLI accept; throws KeyInputError. */
function validate(input: { name?: string; routing_policy?: string; requests_per_minute_override?: Limit | null; tokens_per_minute_override?: Limit | null; catalog_fallbacks_override?: boolean | null }): void {
  if (input.name !== undefined && input.name.length > MAX_KEY_NAME_LENGTH) throw new KeyInputError('name', `A key name has at most ${MAX_KEY_NAME_LENGTH} characters.`);
  if (input.routing_policy !== undefined && input.routing_policy !== '' && !ROUTING_POLICY_PATTERN.test(input.routing_policy)) {
    throw new KeyInputError('routing_policy', 'A routing policy is 1 to 64 letters, digits, ".", "_", ":" or "-".');
  }
  for (const field of OVERRIDE_FIELDS) {
    const value = input[field];
    if (value === undefined || value === null || value === 'unlimited') continue;
    if (!Number.isSafeInteger(value) || value <= 0) throw new KeyInputError(field, `${field} must be a positive integer or "unlimited".`);
  }
  const fallbacks = input.catalog_fallbacks_override;
  if (fallbacks !== undefined && fallbacks !== null && typeof fallbacks !== 'boolean') throw new KeyInputError('catalog_fallbacks_override', 'catalog_fallbacks_override must be true or false.');
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

/** How often last_used_at_ms may be written per key (by the quota script): once a minute. */
export const LAST_USED_INTERVAL_MS = 60_000;

// Creates a key only if its secret is new, with its id index and set entry, atomically.
// KEYS: key hash, key-id index, key-id set. ARGV: hash, key id, then field/value pairs.
const CREATE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[2])
return 1
`;

// Changes fields of a key's hash only if the key exists, so an update never creates a partial key.
// KEYS: key hash. ARGV: count of fields to delete, those fields, then field/value pairs to set.
// Returns the hash after the update, or an empty list.
const UPDATE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local deletes = tonumber(ARGV[1])
if deletes > 0 then redis.call('HDEL', KEYS[1], unpack(ARGV, 2, 1 + deletes)) end
if #ARGV > 1 + deletes then redis.call('HSET', KEYS[1], unpack(ARGV, 2 + deletes)) end
return redis.call('HGETALL', KEYS[1])
`;

/**
 * API keys in Redis, stored only as the SHA-256 of their secret:
 * `<prefix>key:<sha256>` is a hash {key_id, plan, name, created_at_ms, last_used_at_ms, revoked,
 * routing_policy?, requests_per_minute_override?, tokens_per_minute_override?,
 * catalog_fallbacks_override? ('1' on, '0' off)},
 * `<prefix>key-id:<key_id>` holds the sha256 for admin lookups, and the set `<prefix>key-ids`
 * lists every key id. The gRPC service and the CLI both use this one module.
 */
export class KeyStore {
  private readonly prefix: string;
  private readonly now: () => number;

  constructor(private readonly redis: Redis, options: KeyStoreOptions = {}) {
    this.prefix = options.prefix ?? 'auth:';
    this.now = options.now ?? Date.now;
  }

  /**
   * Creates a key. With no secret a random one is drawn; an explicit secret (bootstrap keys) must
   * be well-formed, which the caller checks. Throws KeyExistsError when the secret is taken.
   */
  async create(input: NewKey): Promise<{ key: StoredKey; secret: string }> {
    validate(input);
    const secret = input.secret ?? generateSecret();
    const hash = hashSecret(secret);
    for (;;) {
      const key: StoredKey = {
        key_id: generateKeyId(), plan: input.plan, name: input.name ?? '', created_at_ms: this.now(), last_used_at_ms: 0, revoked: false, routing_policy: input.routing_policy ?? '',
        ...(input.requests_per_minute_override !== undefined && { requests_per_minute_override: input.requests_per_minute_override }),
        ...(input.tokens_per_minute_override !== undefined && { tokens_per_minute_override: input.tokens_per_minute_override }),
        ...(input.catalog_fallbacks_override !== undefined && { catalog_fallbacks_override: input.catalog_fallbacks_override }),
      };
      const fields = ['key_id', key.key_id, 'plan', key.plan, 'name', key.name, 'created_at_ms', String(key.created_at_ms), 'revoked', '0'];
      if (key.routing_policy) fields.push('routing_policy', key.routing_policy);
      for (const field of OVERRIDE_FIELDS) if (key[field] !== undefined) fields.push(field, String(key[field]));
      if (key.catalog_fallbacks_override !== undefined) fields.push('catalog_fallbacks_override', key.catalog_fallbacks_override ? '1' : '0');
      const result = await this.redis.eval(CREATE_SCRIPT, 3, this.keyName(hash), this.idName(key.key_id), this.idSetName(), hash, key.key_id, ...fields);
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
    return this.update(keyId, { revoked: true });
  }

  /** Changes a key's plan; returns it, or undefined when no key has this id. */
  async setPlan(keyId: string, plan: PlanName): Promise<StoredKey | undefined> {
    return this.update(keyId, { plan });
  }

  /**
   * Applies changes to a key atomically and returns it, or undefined when no key has this id. The
   * one write path of the admin API, the CLI and the bootstrap key; a CheckKey that runs after it
   * sees the change, on every replica, since nothing caches key records.
   */
  async update(keyId: string, changes: KeyChanges): Promise<StoredKey | undefined> {
    validate(changes);
    if (!KEY_ID_PATTERN.test(keyId)) return undefined;
    const hash = await this.redis.get(this.idName(keyId));
    if (!hash) return undefined;
    const deletes: string[] = [];
    const sets: string[] = [];
    if (changes.plan !== undefined) sets.push('plan', changes.plan);
    if (changes.name !== undefined) sets.push('name', changes.name);
    if (changes.revoked) sets.push('revoked', '1');
    if (changes.routing_policy !== undefined) {
      if (changes.routing_policy === '') deletes.push('routing_policy');
      else sets.push('routing_policy', changes.routing_policy);
    }
    for (const field of OVERRIDE_FIELDS) {
      const value = changes[field];
      if (value === null) deletes.push(field);
      else if (value !== undefined) sets.push(field, String(value));
    }
    if (changes.catalog_fallbacks_override === null) deletes.push('catalog_fallbacks_override');
    else if (changes.catalog_fallbacks_override !== undefined) sets.push('catalog_fallbacks_override', changes.catalog_fallbacks_override ? '1' : '0');
    const flat = (await this.redis.eval(UPDATE_SCRIPT, 1, this.keyName(hash), String(deletes.length), ...deletes, ...sets)) as string[];
    return parseStoredKey(recordOf(flat));
  }

  /** The Redis key of a key's record, by the SHA-256 of its secret. */
  keyName(hash: string): string { return `${this.prefix}key:${hash}`; }
  private idName(keyId: string): string { return `${this.prefix}key-id:${keyId}`; }
  private idSetName(): string { return `${this.prefix}key-ids`; }
}

/** A flat HGETALL reply (field, value, ...) as a record. */
export function recordOf(flat: string[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (let index = 0; index + 1 < flat.length; index += 2) record[flat[index]!] = flat[index + 1]!;
  return record;
}

function parseLimit(value: string | undefined): Limit | undefined {
  if (value === undefined) return undefined;
  if (value === 'unlimited') return 'unlimited';
  const number = Number(value);
  return Number.isSafeInteger(number) && number > 0 ? number : undefined;
}

/**
 * Reads a stored hash; undefined for a missing or incomplete one (no key id, unknown plan), which
 * callers treat as no key at all rather than guessing.
 */
export function parseStoredKey(hash: Record<string, string>): StoredKey | undefined {
  if (!hash.key_id || !hash.plan || !isPlanName(hash.plan)) return undefined;
  const key: StoredKey = {
    key_id: hash.key_id,
    plan: hash.plan,
    name: hash.name ?? '',
    created_at_ms: Number(hash.created_at_ms ?? 0),
    last_used_at_ms: Number(hash.last_used_at_ms ?? 0),
    revoked: hash.revoked === '1',
    routing_policy: hash.routing_policy ?? '',
  };
  const requests = parseLimit(hash.requests_per_minute_override);
  const tokens = parseLimit(hash.tokens_per_minute_override);
  if (requests !== undefined) key.requests_per_minute_override = requests;
  if (tokens !== undefined) key.tokens_per_minute_override = tokens;
  if (hash.catalog_fallbacks_override === '1' || hash.catalog_fallbacks_override === '0') key.catalog_fallbacks_override = hash.catalog_fallbacks_override === '1';
  return key;
}
