import { authKeys, createKeyRecord, DEFAULT_AUTH_PREFIX, updateKeyRecord, v1ToV2, type AuthKeys } from '@gateway/keyspace';
import type { Logger } from '@gateway/logger';
import { waitForReplicas, type RedisClient } from '@gateway/redis';
import { isPlanName, type PlanName } from '@gateway/proto';
import { validateAllowLists } from '../shared/allow-lists.js';
import { hashSecret, KEY_ID_PATTERN, TEAM_ID_PATTERN } from '../shared/ids.js';
import { KeyInputError, MAX_KEY_NAME_LENGTH } from '../shared/input-error.js';
import { BUDGET_FIELDS, type BudgetLimit, type Limit } from '../shared/limits.js';
import { generateKeyId, generateSecret } from './key-secret.js';

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
  /** Replaces the plan's daily budget (micro-USD) for this key; absent: the plan's. */
  daily_budget_override?: BudgetLimit;
  /** Replaces the plan's monthly budget (micro-USD) for this key; absent: the plan's. */
  monthly_budget_override?: BudgetLimit;
  /** The models the key may use: ids and `prefix*` patterns; absent: every model; empty: none. */
  allowed_models?: string[];
  /** The MCP tools the key may use: namespaced tools, servers and `prefix*` patterns; absent: every tool; empty: none. */
  allowed_mcp_tools?: string[];
  /** The key's team, fixed when it was created; absent: none. */
  team_id?: string;
  /** Whether the request log keeps the bodies of the key's requests; absent: off. */
  log_bodies?: boolean;
}

/** The settings of a key that a creation may give: each absent one stays as the plan has it (or none). */
type KeySettings = Pick<
  StoredKey,
  | 'requests_per_minute_override'
  | 'tokens_per_minute_override'
  | 'routing_policy'
  | 'catalog_fallbacks_override'
  | 'daily_budget_override'
  | 'monthly_budget_override'
  | 'allowed_models'
  | 'allowed_mcp_tools'
>;

/** What may be set when a key is created; absent overrides mean the plan's limits. */
export interface NewKey extends Partial<KeySettings> {
  plan: PlanName;
  name?: string;
  secret?: string;
  /** The team the key joins for good; absent or '': none. */
  team_id?: string;
  /** Whether the request log keeps the bodies of the key's requests; absent: off. */
  log_bodies?: boolean;
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
  /** A budget override of null removes it (the plan's budget applies again). */
  daily_budget_override?: BudgetLimit | null;
  monthly_budget_override?: BudgetLimit | null;
  /** An allow-list of null removes it (every model allowed again). */
  allowed_models?: string[] | null;
  /** An MCP tool allow-list of null removes it (every tool allowed again). */
  allowed_mcp_tools?: string[] | null;
  /** Whether the request log keeps the bodies of the key's requests. */
  log_bodies?: boolean;
  revoked?: true;
}

/** What a routing policy looks like: a short name the router understands. */
export const ROUTING_POLICY_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

const OVERRIDE_FIELDS = ['requests_per_minute_override', 'tokens_per_minute_override', 'daily_budget_override', 'monthly_budget_override'] as const;
const BUDGET_OVERRIDE_FIELDS = BUDGET_FIELDS.map((field) => `${field}_override` as const);

/** Checks the values both the gRPC service and the CLI accept; throws KeyInputError. */
function validate(input: KeyChanges): void {
  if (input.name !== undefined && input.name.length > MAX_KEY_NAME_LENGTH)
    throw new KeyInputError('name', `A key name has at most ${MAX_KEY_NAME_LENGTH} characters.`);
  if (input.routing_policy !== undefined && input.routing_policy !== '' && !ROUTING_POLICY_PATTERN.test(input.routing_policy)) {
    throw new KeyInputError('routing_policy', 'A routing policy is 1 to 64 letters, digits, ".", "_", ":" or "-".');
  }
  for (const field of OVERRIDE_FIELDS) {
    const value = input[field];
    if (value === undefined || value === null || value === 'unlimited') continue;
    const budget = (BUDGET_OVERRIDE_FIELDS as readonly string[]).includes(field);
    if (!Number.isSafeInteger(value) || value <= 0)
      throw new KeyInputError(
        field,
        budget ? `${field} must be a positive number of micro-USD or "unlimited".` : `${field} must be a positive integer or "unlimited".`,
      );
  }
  const fallbacks = input.catalog_fallbacks_override;
  if (fallbacks !== undefined && fallbacks !== null && typeof fallbacks !== 'boolean')
    throw new KeyInputError('catalog_fallbacks_override', 'catalog_fallbacks_override must be true or false.');
  validateAllowLists(input);
}

/** Where a key's data lives: its id, and its team ('' for none), whose tag names it. */
export interface KeyLocation {
  keyId: string;
  teamId: string;
}

/** Thrown by create when the team named does not exist. */
export class TeamNotFoundError extends Error {
  constructor() {
    super('No team has this id.');
    this.name = 'TeamNotFoundError';
  }
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

/** Thrown by create when the secret already belongs to a key. */
export class KeyExistsError extends Error {
  constructor() {
    super('A key with this secret already exists.');
    this.name = 'KeyExistsError';
  }
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
    validate(input);
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
    validate(changes);
    if (!KEY_ID_PATTERN.test(keyId)) return undefined;
    const deletes: string[] = [];
    const sets: Record<string, string> = {};
    if (changes.plan !== undefined) sets.plan = changes.plan;
    if (changes.name !== undefined) sets.name = changes.name;
    if (changes.revoked) sets.revoked = '1';
    if (changes.routing_policy !== undefined) {
      if (changes.routing_policy === '') deletes.push('routing_policy');
      else sets.routing_policy = changes.routing_policy;
    }
    for (const field of OVERRIDE_FIELDS) {
      const value = changes[field];
      if (value === null) deletes.push(field);
      else if (value !== undefined) sets[field] = String(value);
    }
    if (changes.catalog_fallbacks_override === null) deletes.push('catalog_fallbacks_override');
    else if (changes.catalog_fallbacks_override !== undefined) sets.catalog_fallbacks_override = changes.catalog_fallbacks_override ? '1' : '0';
    if (changes.allowed_models === null) deletes.push('allowed_models');
    else if (changes.allowed_models !== undefined) sets.allowed_models = JSON.stringify(changes.allowed_models);
    if (changes.allowed_mcp_tools === null) deletes.push('allowed_mcp_tools');
    else if (changes.allowed_mcp_tools !== undefined) sets.allowed_mcp_tools = JSON.stringify(changes.allowed_mcp_tools);
    if (changes.log_bodies === false) deletes.push('log_bodies');
    else if (changes.log_bodies === true) sets.log_bodies = '1';
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

/** A stored allow-list (a JSON array of strings); undefined when absent or unreadable. */
function parseAllowList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  try {
    const list: unknown = JSON.parse(value);
    return Array.isArray(list) && list.every((entry) => typeof entry === 'string') ? list : undefined;
  } catch {
    return undefined;
  }
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
    ...(hash.team_id && { team_id: hash.team_id }),
    ...(hash.log_bodies === '1' && { log_bodies: true }),
  };
  const requests = parseLimit(hash.requests_per_minute_override);
  const tokens = parseLimit(hash.tokens_per_minute_override);
  if (requests !== undefined) key.requests_per_minute_override = requests;
  if (tokens !== undefined) key.tokens_per_minute_override = tokens;
  const daily = parseLimit(hash.daily_budget_override);
  const monthly = parseLimit(hash.monthly_budget_override);
  if (daily !== undefined) key.daily_budget_override = daily;
  if (monthly !== undefined) key.monthly_budget_override = monthly;
  if (hash.catalog_fallbacks_override === '1' || hash.catalog_fallbacks_override === '0')
    key.catalog_fallbacks_override = hash.catalog_fallbacks_override === '1';
  const allowed = parseAllowList(hash.allowed_models);
  if (allowed) key.allowed_models = allowed;
  const tools = parseAllowList(hash.allowed_mcp_tools);
  if (tools) key.allowed_mcp_tools = tools;
  return key;
}
