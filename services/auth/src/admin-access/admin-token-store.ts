/**
 * Admin tokens in Redis, stored only as the SHA-256 of their secret, like API keys (names from
 * @gateway/keyspace):
 *   `<prefix>admin-token-secret:<sha256>`  string: the token id; written once
 *   `<prefix>admin-token:{<token_id>}`     hash {token_id, name, role, created_at_ms, created_by, revoked}
 *   `<prefix>admin-token-ids`              set of every token id
 * Plain single-key commands only (Redis Cluster). Nothing is cached: a check reads the record, so a
 * revocation counts on every replica at once (the edge caches a positive check for at most 1 s).
 * With `replicas`, a creation and a revocation wait (WAIT, at most 1 s) until that many Redis
 * replicas have them, so that a revocation survives a failover, as a key's does.
 */
import { authKeys, DEFAULT_AUTH_PREFIX, type AuthKeys } from '@gateway/keyspace';
import { type RedisClient, waitForReplicas } from '@gateway/redis';
import { type AdminRoleName, isAdminRoleName } from './admin-roles.js';
import { hashSecret, MAX_SECRET_LENGTH, randomBase62 } from '../shared/ids.js';
import { KeyInputError, MAX_KEY_NAME_LENGTH } from '../shared/input-error.js';

export { ADMIN_ROLE_NAMES, type AdminRoleName, isAdminRoleName } from './admin-roles.js';

/** What an admin token's secret looks like: `bra-` (never `br-`, an API key's) and 40 base62. */
export const ADMIN_TOKEN_SECRET_PATTERN = /^bra-[A-Za-z0-9]{40}$/;
/** What an admin token id looks like. */
export const ADMIN_TOKEN_ID_PATTERN = /^adt_[A-Za-z0-9]{16}$/;

/** The public facts of an admin token as stored; never its secret. */
export interface StoredAdminToken {
  token_id: string;
  name: string;
  role: AdminRoleName;
  created_at_ms: number;
  /** The creating actor's subject. */
  created_by: string;
  revoked: boolean;
}

/** Admin tokens: create, check, list, revoke. The gRPC service and the CLI share it. */
export class AdminTokenStore {
  private readonly names: AuthKeys;
  private readonly now: () => number;
  private readonly replicas: number;

  constructor(
    private readonly redis: RedisClient,
    options: { prefix?: string; now?: () => number; replicas?: number } = {},
  ) {
    this.names = authKeys(options.prefix ?? DEFAULT_AUTH_PREFIX);
    this.now = options.now ?? Date.now;
    this.replicas = options.replicas ?? 0;
  }

  /** Waits for the replicas asked for to have the writes to `name` (at most 1 s; fewer is not an error). */
  private async replicated(name: string): Promise<void> {
    if (this.replicas > 0) await waitForReplicas(this.redis, name, this.replicas, 1_000).catch(() => 0);
  }

  /**
   * Creates a token and returns it with its secret (shown once). The record is written first,
   * then the secret's index, then the id joins the list: a crash in between leaves at worst a
   * record nobody can reach.
   */
  async create(input: { role: AdminRoleName; name?: string; createdBy: string }): Promise<{ token: StoredAdminToken; secret: string }> {
    const name = input.name ?? '';
    if (name.length > MAX_KEY_NAME_LENGTH) throw new KeyInputError('name', `A token name has at most ${MAX_KEY_NAME_LENGTH} characters.`);
    if (!isAdminRoleName(input.role)) throw new KeyInputError('role', 'role must be admin or viewer.');
    const secret = `bra-${randomBase62(40)}`;
    for (;;) {
      const token: StoredAdminToken = {
        token_id: `adt_${randomBase62(16)}`,
        name,
        role: input.role,
        created_at_ms: this.now(),
        created_by: input.createdBy,
        revoked: false,
      };
      const record = this.names.adminToken(token.token_id);
      // 0: a token id collision (1 in 62^16); draw another id.
      if ((await this.redis.hsetnx(record, 'token_id', token.token_id)) !== 1) continue;
      await this.redis.hset(record, { name, role: token.role, created_at_ms: String(token.created_at_ms), created_by: token.created_by, revoked: '0' });
      await this.redis.set(this.names.adminTokenIndex(hashSecret(secret)), token.token_id, 'NX');
      await this.redis.sadd(this.names.adminTokenIds, token.token_id);
      await this.replicated(record);
      return { token, secret };
    }
  }

  /** The live (not revoked) token a secret belongs to, or undefined. */
  async check(secret: string): Promise<StoredAdminToken | undefined> {
    if (secret.length > MAX_SECRET_LENGTH || !ADMIN_TOKEN_SECRET_PATTERN.test(secret)) return undefined;
    const tokenId = await this.redis.get(this.names.adminTokenIndex(hashSecret(secret)));
    const token = tokenId ? await this.get(tokenId) : undefined;
    return token && !token.revoked ? token : undefined;
  }

  /** The token with this id, or undefined. */
  async get(tokenId: string): Promise<StoredAdminToken | undefined> {
    if (!ADMIN_TOKEN_ID_PATTERN.test(tokenId)) return undefined;
    return parseStoredAdminToken(await this.redis.hgetall(this.names.adminToken(tokenId)));
  }

  /** Every token, oldest first. */
  async list(): Promise<StoredAdminToken[]> {
    const ids = await this.redis.smembers(this.names.adminTokenIds);
    const tokens = (await Promise.all(ids.map((id) => this.get(id)))).filter((token): token is StoredAdminToken => token !== undefined);
    return tokens.sort((a, b) => a.created_at_ms - b.created_at_ms || a.token_id.localeCompare(b.token_id));
  }

  /** Revokes a token for good; returns it, or undefined when no token has this id. */
  async revoke(tokenId: string): Promise<StoredAdminToken | undefined> {
    const token = await this.get(tokenId);
    if (!token) return undefined;
    if (!token.revoked) {
      await this.redis.hset(this.names.adminToken(tokenId), 'revoked', '1');
      await this.replicated(this.names.adminToken(tokenId));
    }
    return { ...token, revoked: true };
  }
}

/** A stored hash as a token; undefined for a missing or incomplete one. */
function parseStoredAdminToken(hash: Record<string, string>): StoredAdminToken | undefined {
  if (!hash.token_id || !hash.role || !isAdminRoleName(hash.role)) return undefined;
  return {
    token_id: hash.token_id,
    name: hash.name ?? '',
    role: hash.role,
    created_at_ms: Number(hash.created_at_ms ?? 0),
    created_by: hash.created_by ?? '',
    revoked: hash.revoked === '1',
  };
}
