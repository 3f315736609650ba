import type { RedisClient } from '@gateway/redis';
import { luaScript, namedReply, oneOf, runScript } from './script.js';

const CREATE_KEY_RECORD = luaScript('gatewayCreateKeyRecord', 1, ['create-key-record.lua']);
const UPDATE_KEY_RECORD = luaScript('gatewayUpdateKeyRecord', 1, ['update-key-record.lua']);

/** A flat HGETALL reply (field, value, ...) as a record. */
export function recordOf(flat: readonly string[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (let index = 0; index + 1 < flat.length; index += 2) record[flat[index]!] = flat[index + 1]!;
  return record;
}

/**
 * Writes a key's record (`record`, its name) from field/value pairs unless one exists there;
 * resolves 'exists' then (scripts/create-key-record.lua).
 */
export async function createKeyRecord(redis: RedisClient, record: string, fields: Readonly<Record<string, string>>): Promise<'created' | 'exists'> {
  const reply = await runScript(redis, CREATE_KEY_RECORD, [record], Object.entries(fields).flat());
  return oneOf(namedReply(reply), 'outcome', ['created', 'exists'] as const);
}

/** Changes to a key's record: fields to delete, fields to set. */
export interface KeyRecordChanges {
  deletes: readonly string[];
  sets: Readonly<Record<string, string>>;
}

/**
 * Applies changes to a key's record only if it exists; resolves the record after them, or
 * undefined when there is none (scripts/update-key-record.lua).
 */
export async function updateKeyRecord(redis: RedisClient, record: string, changes: KeyRecordChanges): Promise<Record<string, string> | undefined> {
  const args = [String(changes.deletes.length), ...changes.deletes, ...Object.entries(changes.sets).flat()];
  const flat = (await runScript(redis, UPDATE_KEY_RECORD, [record], args)) as string[];
  return flat.length > 0 ? recordOf(flat) : undefined;
}
