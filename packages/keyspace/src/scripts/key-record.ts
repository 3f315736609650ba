import type { RedisClient } from '@gateway/redis';
import { SCRIPTS } from './registry.js';
import { namedReply, oneOf, runScript } from './script.js';

const {
  createKeyRecord: CREATE_KEY_RECORD,
  createTeamKeyRecord: CREATE_TEAM_KEY_RECORD,
  updateKeyRecord: UPDATE_KEY_RECORD,
  updateTeamKeyRecord: UPDATE_TEAM_KEY_RECORD,
  deleteTeam: DELETE_TEAM,
} = SCRIPTS;

/** A member key's team: its record and its set of live keys (authKeys' team and teamKeys). */
export interface TeamRecordNames {
  team: string;
  liveKeys: string;
}

/** A flat HGETALL reply (field, value, ...) as a record. */
export function recordOf(flat: readonly string[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (let index = 0; index + 1 < flat.length; index += 2) record[flat[index]!] = flat[index + 1]!;
  return record;
}

/**
 * Writes a key's record (`record`, its name) from field/value pairs unless one exists there;
 * resolves 'exists' then. For a member of a team (`team`), only while the team exists ('no_team'
 * otherwise), joining its live keys (scripts/create-key-record.lua).
 */
export async function createKeyRecord(
  redis: RedisClient,
  record: string,
  fields: Readonly<Record<string, string>>,
  team?: TeamRecordNames,
): Promise<'created' | 'exists' | 'no_team'> {
  const args = Object.entries(fields).flat();
  const reply = team
    ? await runScript(redis, CREATE_TEAM_KEY_RECORD, [record, team.team, team.liveKeys], args)
    : await runScript(redis, CREATE_KEY_RECORD, [record], args);
  return oneOf(namedReply(reply), 'outcome', ['created', 'exists', 'no_team'] as const);
}

/**
 * Deletes a team's record and window unless it has a live key (scripts/delete-team.lua): 'has_keys'
 * then, 'unknown' when there is no such team.
 */
export async function deleteTeamRecord(redis: RedisClient, team: TeamRecordNames, window: readonly string[]): Promise<'deleted' | 'has_keys' | 'unknown'> {
  const reply = await runScript(redis, DELETE_TEAM, [team.team, team.liveKeys, ...window], []);
  return oneOf(namedReply(reply), 'outcome', ['deleted', 'has_keys', 'unknown'] as const);
}

/** Changes to a key's record: fields to delete, fields to set. */
export interface KeyRecordChanges {
  deletes: readonly string[];
  sets: Readonly<Record<string, string>>;
}

/**
 * Applies changes to a key's record (or a team's) only if it exists; resolves the record after
 * them, or undefined when there is none. For a member of a team, a revoked key leaves the team's
 * live keys (`liveKeys`) in the same step (scripts/update-key-record.lua).
 */
export async function updateKeyRecord(
  redis: RedisClient,
  record: string,
  changes: KeyRecordChanges,
  liveKeys?: string,
): Promise<Record<string, string> | undefined> {
  const args = [String(changes.deletes.length), ...changes.deletes, ...Object.entries(changes.sets).flat()];
  const flat = (
    liveKeys ? await runScript(redis, UPDATE_TEAM_KEY_RECORD, [record, liveKeys], args) : await runScript(redis, UPDATE_KEY_RECORD, [record], args)
  ) as string[];
  return flat.length > 0 ? recordOf(flat) : undefined;
}
