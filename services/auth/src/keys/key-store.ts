/**
 * The store of API keys (KeyStore, in Redis: the layout is on the class) and its errors; what a
 * key holds, how a change is checked and how a stored hash is read are stored-key.ts.
 */
import { authKeys, createKeyRecord, DEFAULT_AUTH_PREFIX, updateKeyRecord, v1ToV2, type AuthKeys } from '@gateway/keyspace';
import type { Logger } from '@gateway/logger';
import { waitForReplicas, type RedisClient } from '@gateway/redis';
import type { PlanName } from '@gateway/proto';
import { hashSecret, KEY_ID_PATTERN, TEAM_ID_PATTERN } from '../shared/ids.js';
import { KeyExistsError, TeamNotFoundError } from '../shared/input-error.js';
import { generateKeyId, generateSecret } from './key-secret.js';
import { type KeyChanges, type NewKey, OVERRIDE_FIELDS, parseStoredKey, recordChanges, type StoredKey, validateKeyChanges } from './stored-key.js';

/** Where a key's data lives: its id, and its team ('' for none), whose tag names it. */
export interface KeyLocation {
  keyId: string;
  teamId: string;
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
  /**
   * Replicas that must have a key's creation or change before it is reported done (Redis WAIT),
   * so that a revocation survives a failover to a replica; 0 (default) waits for none.
   */
  replicas?: number;
  /** Warned about a change that fewer replicas than asked for acknowledged in time. */
  logger?: Pick<Logger, 'warn'>;
  /**
   * A connection of its own for key changes, where a service's decisions share `redis`: WAIT holds
   * the connection it runs on, and decisions must never wait on it. Default: `redis`.
   */
  writer?: RedisClient;
}

/** How often last_used_at_ms may be written per key (by the quota script): once a minute. */
export const LAST_USED_INTERVAL_MS = 60_000;

/** How many secret hash -> key id entries (and key id -> team entries) a store remembers (about 150 bytes each). */
export const KEY_ID_CACHE_SIZE = 100_000;

/** Remembers an entry in a bounded map, forgetting the oldest one when full. */
function remember<V>(cache: Map<string, V>, key: string, value: V): void {
  if (cache.size >= KEY_ID_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(key, value);
}

/** How long WAIT may take for a key change to reach the replicas asked for. */
const REPLICA_WAIT_MS = 1_000;

/**
 * API keys in Redis, stored only as the SHA-256 of their secret, laid out so that everything a
 * request touches lives in one Redis Cluster slot, the key id's (the team's, for a member of a
 * team: its names carry `{<team_id>}:<key_id>` instead of `{<key_id>}`, see @gateway/keyspace):
 *   `<prefix>key:<sha256>`        hash {key_id, team_id?}: the secret's index, written once, never changed
 *   `<prefix>key-teams`           hash key id -> team id of every member of a team, written once
 *   `<prefix>record:{<key_id>}`   hash {key_id, plan, name, created_at_ms, last_used_at_ms, revoked,
 *                                 routing_policy?, requests_per_minute_override?,
 *                                 tokens_per_minute_override?, catalog_fallbacks_override? ('1'
 *                                 on, '0' off), daily_budget_override?,
 *                                 monthly_budget_override? (micro-USD or 'unlimited'),
 *                                 allowed_models? (a JSON array of ids and `prefix*` patterns),
 *                                 allowed_mcp_tools? (a JSON array, the same rules),
 *                                 log_bodies? ('1': the request log keeps the bodies)}:
 *                                 the key, beside its quota window (`{<key_id>}`)
 *   `<prefix>key-ids`             set of every key id
 * Since a secret's key id never changes, the index is cached in memory: a request costs the one
 * quota script on the key's slot. The names come from @gateway/keyspace (authKeys). An earlier
 * layout is moved by migrateEarlierLayout, and one key at a time when met (@gateway/keyspace's
 * migrations/v1-to-v2.ts). The gRPC service and the CLI both use this one module.
 */
export class KeyStore {
  /** The names of this store's keys. */
  private readonly names: AuthKeys;
  private readonly now: () => number;
  private readonly keyIds = new Map<string, KeyLocation>();
  /** Key id -> team id ('' for none): never changes once a key exists. */
  private readonly teams = new Map<string, string>();
  /** The connection key changes are written on (see KeyStoreOptions.writer). */
  private readonly writer: RedisClient;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: KeyStoreOptions = {},
  ) {
    this.names = authKeys(options.prefix ?? DEFAULT_AUTH_PREFIX);
    this.now = options.now ?? Date.now;
    this.writer = options.writer ?? redis;
  }

  /**
   * Creates a key. With no secret a random one is drawn; an explicit secret (bootstrap keys) must
   * be well-formed, which the caller checks. Throws KeyExistsError when the secret is taken.
   * The record is written first, then the secret's index (which claims the secret), then the id
   * joins the list: a crash in between leaves at worst a record nobody can reach.
   */
  async create(input: NewKey): Promise<{ key: StoredKey; secret: string }> {
    validateKeyChanges(input);
    const teamId = input.team_id ?? '';
    if (teamId && !TEAM_ID_PATTERN.test(teamId)) throw new TeamNotFoundError();
    const secret = input.secret ?? generateSecret();
    const hash = hashSecret(secret);
    if (await this.keyIdOf(hash)) throw new KeyExistsError();
    for (;;) {
      const key: StoredKey = {
        key_id: generateKeyId(),
        plan: input.plan,
        name: input.name ?? '',
        created_at_ms: this.now(),
        last_used_at_ms: 0,
        revoked: false,
        routing_policy: input.routing_policy ?? '',
        ...(input.requests_per_minute_override !== undefined && { requests_per_minute_override: input.requests_per_minute_override }),
        ...(input.tokens_per_minute_override !== undefined && { tokens_per_minute_override: input.tokens_per_minute_override }),
        ...(input.catalog_fallbacks_override !== undefined && { catalog_fallbacks_override: input.catalog_fallbacks_override }),
        ...(input.daily_budget_override !== undefined && { daily_budget_override: input.daily_budget_override }),
        ...(input.monthly_budget_override !== undefined && { monthly_budget_override: input.monthly_budget_override }),
        ...(input.allowed_models !== undefined && { allowed_models: [...input.allowed_models] }),
        ...(input.allowed_mcp_tools !== undefined && { allowed_mcp_tools: [...input.allowed_mcp_tools] }),
        ...(teamId && { team_id: teamId }),
        ...(input.log_bodies && { log_bodies: true }),
      };
      const fields: Record<string, string> = { key_id: key.key_id, plan: key.plan, name: key.name, created_at_ms: String(key.created_at_ms), revoked: '0' };
      if (key.routing_policy) fields.routing_policy = key.routing_policy;
      for (const field of OVERRIDE_FIELDS) if (key[field] !== undefined) fields[field] = String(key[field]);
      if (key.catalog_fallbacks_override !== undefined) fields.catalog_fallbacks_override = key.catalog_fallbacks_override ? '1' : '0';
      if (key.allowed_models !== undefined) fields.allowed_models = JSON.stringify(key.allowed_models);
      if (key.allowed_mcp_tools !== undefined) fields.allowed_mcp_tools = JSON.stringify(key.allowed_mcp_tools);
      if (teamId) fields.team_id = teamId;
      if (key.log_bodies) fields.log_bodies = '1';
      const record = await this.createRecord(key.key_id, teamId, fields);
      // undefined: a key id collision (1 in 62^16); draw another id.
      if (!record) continue;
      const index = this.names.secretIndex(hash);
      if ((await this.writer.hsetnx(index, 'key_id', key.key_id)) !== 1) {
        await this.writer.del(record);
        throw new KeyExistsError();
      }
      // A member's team goes in the index too, so that a lookup needs the index alone. Nobody can
      // look the secret up before create returns it, so no lookup sees the index without it.
      if (teamId) await this.writer.hset(index, 'team_id', teamId);
      await this.writer.sadd(this.names.keyIds, key.key_id);
      await this.replicated(index, 'key created');
      await this.replicated(record, 'key created');
      remember(this.keyIds, hash, { keyId: key.key_id, teamId });
      remember(this.teams, key.key_id, teamId);
      return { key, secret };
    }
  }

  /**
   * Writes a new key's record (joining its team's live keys, for a member): resolves its name, or
   * undefined when the id is taken. A member's team is noted by key id first (HSETNX, so a taken id
   * keeps its own), so that whoever learns the id finds its data. Throws TeamNotFoundError.
   */
  private async createRecord(keyId: string, teamId: string, fields: Record<string, string>): Promise<string | undefined> {
    const record = this.names.record(keyId, teamId);
    if (!teamId) return (await createKeyRecord(this.writer, record, fields)) === 'created' ? record : undefined;
    if ((await this.writer.hsetnx(this.names.keyTeams, keyId, teamId)) !== 1) return undefined;
    const outcome = await createKeyRecord(this.writer, record, fields, { team: this.names.team(teamId), liveKeys: this.names.teamKeys(teamId) });
    if (outcome === 'created') return record;
    await this.writer.hdel(this.names.keyTeams, keyId);
    if (outcome === 'no_team') throw new TeamNotFoundError();
    return undefined;
  }

  /**
   * The key id a secret's hash names, or undefined: from memory once seen (it never changes), else
   * one HGET. A record of the earlier layout met here is migrated first.
   */
  async keyIdOf(hash: string): Promise<string | undefined> {
    return (await this.locate(hash))?.keyId;
  }

  /**
   * The key and team a secret's hash names, or undefined: from memory once seen (neither ever
   * changes), else one HMGET of the index.
   */
  async locate(hash: string): Promise<KeyLocation | undefined> {
    const cached = this.keyIds.get(hash);
    if (cached) return cached;
    const [keyId, legacyPlan, indexedTeam] = await this.redis.hmget(this.names.secretIndex(hash), 'key_id', 'plan', 'team_id');
    if (!keyId) return undefined;
    if (v1ToV2.isV1Index(legacyPlan)) await v1ToV2.migrateKey(this.redis, this.names, hash);
    const location = { keyId, teamId: indexedTeam ?? '' };
    remember(this.keyIds, hash, location);
    return location;
  }

  /** A key id's team ('' for none, or for no such key): from memory once seen, else one HGET. */
  async teamOf(keyId: string): Promise<string> {
    const cached = this.teams.get(keyId);
    if (cached !== undefined) return cached;
    const teamId = (await this.redis.hget(this.names.keyTeams, keyId)) ?? '';
    remember(this.teams, keyId, teamId);
    return teamId;
  }

  /** Forgets a cached secret hash (its record was not found where the index said). */
  forget(hash: string): void {
    this.keyIds.delete(hash);
  }

  /** Finds a key by its secret. */
  async findBySecret(secret: string): Promise<FoundKey | undefined> {
    const hash = hashSecret(secret);
    const keyId = await this.keyIdOf(hash);
    const key = keyId ? await this.get(keyId) : undefined;
    return key && { key, hash };
  }

  /** The key with this id, or undefined. */
  async get(keyId: string): Promise<StoredKey | undefined> {
    if (!KEY_ID_PATTERN.test(keyId)) return undefined;
    return parseStoredKey(await this.redis.hgetall(this.names.record(keyId, await this.teamOf(keyId))));
  }

  /** Every key, oldest first; with a team id, only that team's. */
  async list(teamId?: string): Promise<StoredKey[]> {
    const ids = await this.redis.smembers(this.names.keyIds);
    const teams = ids.length > 0 ? await this.redis.hmget(this.names.keyTeams, ...ids) : [];
    const wanted = ids.map((id, index) => ({ id, team: teams[index] ?? '' })).filter((entry) => teamId === undefined || entry.team === teamId);
    // One command per record: on a cluster they live on different nodes (the client groups them).
    const records = await Promise.all(wanted.map(({ id, team }) => this.redis.hgetall(this.names.record(id, team))));
    const keys = records.map(parseStoredKey).filter((key): key is StoredKey => key !== undefined);
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
    validateKeyChanges(changes);
    if (!KEY_ID_PATTERN.test(keyId)) return undefined;
    const { deletes, sets } = recordChanges(changes);
    const teamId = await this.teamOf(keyId);
    const record = this.names.record(keyId, teamId);
    const updated = await updateKeyRecord(this.writer, record, { deletes, sets }, teamId ? this.names.teamKeys(teamId) : undefined);
    if (updated) await this.replicated(record, 'key changed');
    return updated && parseStoredKey(updated);
  }

  /**
   * Moves every key of the earlier layout to this one; resolves how many moved. Idempotent, and
   * safe beside replicas serving requests (each key moves on its own, its record first). Auth runs
   * it at start; replicas of the earlier version must be gone by then, or a change one of them
   * makes to a moved key is not seen. The move is @gateway/keyspace's migrations/v1-to-v2.ts,
   * which goes in release 0.3.0.
   */
  async migrateEarlierLayout(): Promise<number> {
    return v1ToV2.migrateEveryKey(this.redis, this.names);
  }

  /** Waits for the replicas asked for to have the writes to `name`; warns when they did not. */
  private async replicated(name: string, what: string): Promise<void> {
    const wanted = this.options.replicas ?? 0;
    if (wanted <= 0) return;
    const acknowledged = await waitForReplicas(this.writer, name, wanted, REPLICA_WAIT_MS).catch(() => 0);
    if (acknowledged < wanted) this.options.logger?.warn({ replicas: acknowledged, wanted }, `${what}, but fewer Redis replicas than asked for have it yet`);
  }
}
