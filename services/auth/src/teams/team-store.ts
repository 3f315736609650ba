import { authKeys, createKeyRecord, DEFAULT_AUTH_PREFIX, deleteTeamRecord, updateKeyRecord, windowKeyList, type AuthKeys } from '@gateway/keyspace';
import type { RedisClient } from '@gateway/redis';
import { validateAllowLists } from '../shared/allow-lists.js';
import { randomBase62, TEAM_ID_PATTERN } from '../shared/ids.js';
import { KeyInputError } from '../shared/input-error.js';

/** A team's limits: a positive number, or absent for none (a team has no plan to fall back on). */
export interface TeamLimits {
  requests_per_minute?: number;
  tokens_per_minute?: number;
  /** micro-USD per UTC day. */
  daily_budget?: number;
  /** micro-USD per UTC month. */
  monthly_budget?: number;
  /** Model ids and `prefix*` patterns; absent: every model. */
  allowed_models?: string[];
  /** MCP tool names, server names and `prefix*` patterns; absent: every tool. */
  allowed_mcp_tools?: string[];
  /** Whether the request log keeps the bodies of the team's keys' requests; absent: off. */
  log_bodies?: boolean;
}

/** A team as stored. */
export interface StoredTeam extends TeamLimits {
  team_id: string;
  name: string;
  created_at_ms: number;
  /** How many of its keys are live (not revoked). */
  live_keys: number;
}

/** A team to create. */
export interface NewTeam extends TeamLimits {
  name: string;
}

/** Changes to a team: absent unchanged; null removes a limit, a budget or the allow-list. */
export type TeamChanges = { name?: string } & { [field in keyof TeamLimits]?: TeamLimits[field] | null };

/** The longest team name accepted. */
export const MAX_TEAM_NAME_LENGTH = 200;

const LIMIT_FIELDS = ['requests_per_minute', 'tokens_per_minute', 'daily_budget', 'monthly_budget'] as const;

/** A new public team id: `team_` and 16 base62 characters. */
export function generateTeamId(): string {
  return `team_${randomBase62(16)}`;
}

/** Checks a team's values; throws KeyInputError naming the field. */
function validate(input: TeamChanges, creating: boolean): void {
  if (input.name !== undefined || creating) {
    const name = input.name ?? '';
    if (name.length < 1 || name.length > MAX_TEAM_NAME_LENGTH) throw new KeyInputError('name', `A team name has 1 to ${MAX_TEAM_NAME_LENGTH} characters.`);
  }
  for (const field of LIMIT_FIELDS) {
    const value = input[field];
    if (value === undefined || value === null) continue;
    if (!Number.isSafeInteger(value) || value <= 0) throw new KeyInputError(field, `${field} must be a positive integer.`);
  }
  validateAllowLists(input);
}

/** The record's fields of a team's limits. */
function limitFields(limits: TeamLimits): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const field of LIMIT_FIELDS) if (limits[field] !== undefined) fields[field] = String(limits[field]);
  if (limits.allowed_models !== undefined) fields.allowed_models = JSON.stringify(limits.allowed_models);
  if (limits.allowed_mcp_tools !== undefined) fields.allowed_mcp_tools = JSON.stringify(limits.allowed_mcp_tools);
  if (limits.log_bodies) fields.log_bodies = '1';
  return fields;
}

/** Reads a stored team; undefined for a missing or incomplete one. */
export function parseStoredTeam(hash: Record<string, string>, liveKeys: number): StoredTeam | undefined {
  if (!hash.team_id) return undefined;
  const team: StoredTeam = { team_id: hash.team_id, name: hash.name ?? '', created_at_ms: Number(hash.created_at_ms ?? 0), live_keys: liveKeys };
  for (const field of LIMIT_FIELDS) {
    const value = Number(hash[field]);
    if (hash[field] !== undefined && Number.isSafeInteger(value) && value > 0) team[field] = value;
  }
  if (hash.allowed_models !== undefined) team.allowed_models = JSON.parse(hash.allowed_models) as string[];
  if (hash.allowed_mcp_tools !== undefined) team.allowed_mcp_tools = JSON.parse(hash.allowed_mcp_tools) as string[];
  if (hash.log_bodies === '1') team.log_bodies = true;
  return team;
}

/**
 * Teams in Redis, each in its own Redis Cluster slot (`{<team_id>}`), where its members' keys,
 * windows and spend live too, so that one script decides a request against a key and its team:
 *   `<prefix>team:{<team_id>}`                 hash {team_id, name, created_at_ms, requests_per_minute?,
 *                                              tokens_per_minute?, daily_budget?, monthly_budget? (micro-USD),
 *                                              allowed_models? (JSON array), log_bodies? ('1': the request
 *                                              log keeps the bodies of its keys' requests)}
 *   `<prefix>team-keys:{<team_id>}`            set of the team's live key ids (a revoked key leaves it)
 *   `<prefix>team-window:{<team_id>}:...`      the team's quota window (as a key's)
 *   `<prefix>team-ids`                         set of every team id
 * Nothing caches a team's record: a change applies to the next decision on every replica.
 */
export class TeamStore {
  private readonly names: AuthKeys;
  private readonly now: () => number;

  constructor(
    private readonly redis: RedisClient,
    options: { prefix?: string; now?: () => number } = {},
  ) {
    this.names = authKeys(options.prefix ?? DEFAULT_AUTH_PREFIX);
    this.now = options.now ?? Date.now;
  }

  /** Creates a team; throws KeyInputError for an invalid value. */
  async create(input: NewTeam): Promise<StoredTeam> {
    validate(input, true);
    for (;;) {
      const teamId = generateTeamId();
      const createdAt = this.now();
      const fields = { team_id: teamId, name: input.name, created_at_ms: String(createdAt), ...limitFields(input) };
      // 'exists': a team id collision (1 in 62^16); draw another id.
      if ((await createKeyRecord(this.redis, this.names.team(teamId), fields)) !== 'created') continue;
      await this.redis.sadd(this.names.teamIds, teamId);
      return parseStoredTeam(fields, 0)!;
    }
  }

  /** The team with this id, or undefined. */
  async get(teamId: string): Promise<StoredTeam | undefined> {
    if (!TEAM_ID_PATTERN.test(teamId)) return undefined;
    const [hash, live] = await Promise.all([this.redis.hgetall(this.names.team(teamId)), this.redis.scard(this.names.teamKeys(teamId))]);
    return parseStoredTeam(hash, live);
  }

  /** Every team, oldest first. */
  async list(): Promise<StoredTeam[]> {
    const ids = await this.redis.smembers(this.names.teamIds);
    const teams = await Promise.all(ids.map((id) => this.get(id)));
    return teams
      .filter((team): team is StoredTeam => team !== undefined)
      .sort((a, b) => a.created_at_ms - b.created_at_ms || a.team_id.localeCompare(b.team_id));
  }

  /** Changes a team atomically; resolves it, or undefined when no team has this id. */
  async update(teamId: string, changes: TeamChanges): Promise<StoredTeam | undefined> {
    validate(changes, false);
    if (!TEAM_ID_PATTERN.test(teamId)) return undefined;
    const deletes: string[] = [];
    const sets: Record<string, string> = {};
    if (changes.name !== undefined) sets.name = changes.name;
    for (const field of [...LIMIT_FIELDS, 'allowed_models', 'allowed_mcp_tools'] as const) if (changes[field] === null) deletes.push(field);
    if (changes.log_bodies === false) deletes.push('log_bodies');
    const limits = Object.fromEntries(Object.entries(changes).filter(([field, value]) => field !== 'name' && value !== null)) as TeamLimits;
    Object.assign(sets, limitFields(limits));
    const updated = await updateKeyRecord(this.redis, this.names.team(teamId), { deletes, sets });
    return updated && parseStoredTeam(updated, await this.redis.scard(this.names.teamKeys(teamId)));
  }

  /** Deletes a team without live keys: 'deleted', 'has_keys' (revoke them first), or undefined for no such team. */
  async delete(teamId: string): Promise<'deleted' | 'has_keys' | undefined> {
    if (!TEAM_ID_PATTERN.test(teamId)) return undefined;
    const names = { team: this.names.team(teamId), liveKeys: this.names.teamKeys(teamId) };
    const outcome = await deleteTeamRecord(this.redis, names, windowKeyList(this.names.teamWindow(teamId)));
    if (outcome === 'unknown') return undefined;
    if (outcome === 'deleted') await this.redis.srem(this.names.teamIds, teamId);
    return outcome;
  }
}
