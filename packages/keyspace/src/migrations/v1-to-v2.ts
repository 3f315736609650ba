/**
 * The earlier key layout (v1) and the move to the current one (v2).
 *
 * v1, auth: a key's whole record under its secret's index `<prefix>key:<sha256>`, and an index
 * `<prefix>key-id:<key_id>` -> sha256. v2 (keys.ts): the record under `<prefix>record:{<key_id>}`
 * beside the key's quota window, the secret's index holding only `key_id`; `<prefix>layout` says
 * `record-by-key-id` once every key moved.
 * v1, metering (read, never written): totals `metering:key:<key_id>` and `metering:model:<model_id>`
 * and de-duplication sets `metering:dedup:<stream>`, without hash tags. Their totals are added to
 * the current ones and an event they remember is not metered again.
 *
 * To be removed in release 0.3.0, with every reader of the v1 names: every deployment runs 0.2.x
 * (which moves each key at start and when met, and whose usage streams outlive the v1 records)
 * before it upgrades.
 */
import type { RedisClient } from '@gateway/redis';
import { type AuthKeys, DEDUP_PREFIX, KEY_TOTALS_PREFIX } from '../keys.js';
import { createKeyRecord } from '../scripts/key-record.js';

/** What `<prefix>layout` holds once every key is in the v2 layout. */
export const V2_LAYOUT = 'record-by-key-id';

/** v1's index of a key id: `<prefix>key-id:<key_id>` -> the SHA-256 of its secret. */
export function v1KeyIdIndex(keys: AuthKeys, keyId: string): string {
  return `${keys.prefix}key-id:${keyId}`;
}

/** v1's totals of a key (no hash tag). */
export function v1KeyTotalsKey(keyId: string): string {
  return KEY_TOTALS_PREFIX + keyId;
}

/** v1's totals of a model. */
export function v1ModelTotalsKey(modelId: string): string {
  return `metering:model:${modelId}`;
}

/** v1's de-duplication set of a usage stream. */
export function v1DedupKey(stream: string): string {
  return DEDUP_PREFIX + stream;
}

/** Whether a secret's index, as read, is a v1 record (it has fields beside key_id, `plan` among them). */
export function isV1Index(plan: string | null | undefined): boolean {
  return plan !== null && plan !== undefined;
}

/**
 * Moves one key of v1: its record to `record:{key_id}` (unless one is there), its id into the set,
 * and its index down to `key_id`. Resolves false when the index is not a v1 record.
 */
export async function migrateKey(redis: RedisClient, keys: AuthKeys, secretHash: string): Promise<boolean> {
  const index = keys.secretIndex(secretHash);
  const legacy = await redis.hgetall(index);
  if (!legacy.key_id || legacy.plan === undefined) return false;
  await createKeyRecord(redis, keys.record(legacy.key_id), legacy);
  await redis.sadd(keys.keyIds, legacy.key_id);
  const stale = Object.keys(legacy).filter((field) => field !== 'key_id');
  if (stale.length > 0) await redis.hdel(index, ...stale);
  return true;
}

/**
 * Moves every key of v1 to v2; resolves how many moved. Idempotent, and safe beside replicas
 * serving requests (each key moves on its own, its record first). Replicas of the earlier version
 * must be gone by then, or a change one of them makes to a moved key is not seen.
 */
export async function migrateEveryKey(redis: RedisClient, keys: AuthKeys): Promise<number> {
  if ((await redis.get(keys.layout)) === V2_LAYOUT) return 0;
  const ids = await redis.smembers(keys.keyIds);
  let moved = 0;
  // A few hundred keys at a time: one command per key, grouped by the client.
  for (let start = 0; start < ids.length; start += 256) {
    const results = await Promise.all(
      ids.slice(start, start + 256).map(async (id) => {
        const legacyIndex = v1KeyIdIndex(keys, id);
        const hash = await redis.get(legacyIndex);
        if (!hash) return false;
        const migrated = await migrateKey(redis, keys, hash);
        await redis.del(legacyIndex);
        return migrated;
      }),
    );
    moved += results.filter(Boolean).length;
  }
  await redis.set(keys.layout, V2_LAYOUT);
  return moved;
}
