/**
 * Stored responses within their bounds: per key (a count and a size) and in total (a size). A
 * response's stored size is the UTF-8 bytes of its stored form (the response and its input items):
 * what it costs in Redis, give or take the hash's overhead. Over a bound the OLDEST responses are
 * forgotten (deleted), never the one just stored: a conversation continues from its latest
 * response, and a store that is full keeps storing. The per-key bound is kept in the key's slot
 * (scripts/response-put.lua); the total in one slot of its own (scripts/response-total.lua), a
 * second step: a response whose second step failed (Redis down between) is not counted in the
 * total until it expires, and is never counted twice.
 */
import type { RedisClient } from '@gateway/redis';
import { storedResponseKey, storedResponsesIndexKey, storedResponsesSizesKey, type StoredResponsesTotalKeys } from '../keys.js';
import { SCRIPTS } from './registry.js';
import { namedArguments, namedReply, numberField, runScript } from './script.js';

const { responsePut: RESPONSE_PUT, responseDelete: RESPONSE_DELETE, responseTotal: RESPONSE_TOTAL } = SCRIPTS;

/** The store's bounds; 0 for any of them: none. */
export interface StoredResponseBounds {
  /** Responses kept per key. */
  maxPerKey: number;
  /** Bytes kept per key. */
  maxBytesPerKey: number;
  /** Bytes kept in all. */
  maxTotalBytes: number;
}

/** One response to store. */
export interface StoredResponseInput {
  keyId: string;
  responseId: string;
  /** The Response object as answered (JSON). */
  response: string;
  /** The input items that led to it (JSON array). */
  input: string;
  /** How long it is kept (ms). */
  ttlMs: number;
  /** Unix ms; absent: now. */
  nowMs?: number;
}

/** What storing one response forgot to keep the bounds. */
export interface StoredResponsePut {
  /** The stored size of the response (bytes). */
  bytes: number;
  /** How many of the key's older responses were deleted for the key's bound. */
  evictedForKey: number;
  /** How many older responses (any key's) were deleted for the total bound. */
  evictedForTotal: number;
  /** The bytes stored in all after the put. */
  totalBytes: number;
}

function words(value: string | number | undefined): string[] {
  return String(value ?? '')
    .split(' ')
    .filter(Boolean);
}

/** `<key_id>:<response_id>`: a response among all of them. */
function member(keyId: string, responseId: string): string {
  return `${keyId}:${responseId}`;
}

/** Deletes one key's response and forgets its size in the key's index; true when it existed. */
async function deleteOwn(redis: RedisClient, keyId: string, responseId: string): Promise<boolean> {
  const reply = namedReply(
    await runScript(
      redis,
      RESPONSE_DELETE,
      [storedResponseKey(keyId, responseId), storedResponsesIndexKey(keyId), storedResponsesSizesKey(keyId)],
      namedArguments({ id: responseId }),
    ),
  );
  return numberField(reply, 'deleted') > 0;
}

/**
 * Stores one response (replacing one of the same id of the same key), then keeps the key within
 * its bound and the store within its total, deleting the oldest responses over either.
 */
export async function putStoredResponse(
  redis: RedisClient,
  input: StoredResponseInput,
  bounds: StoredResponseBounds,
  totalKeys: StoredResponsesTotalKeys,
): Promise<StoredResponsePut> {
  const { keyId, responseId } = input;
  const nowMs = input.nowMs ?? Date.now();
  const bytes = Buffer.byteLength(input.response) + Buffer.byteLength(input.input);
  const own = namedReply(
    await runScript(
      redis,
      RESPONSE_PUT,
      [storedResponseKey(keyId, responseId), storedResponsesIndexKey(keyId), storedResponsesSizesKey(keyId)],
      namedArguments({
        id: responseId,
        response: input.response,
        input: input.input,
        bytes,
        now: nowMs,
        ttl_ms: input.ttlMs,
        max_count: bounds.maxPerKey,
        max_bytes: bounds.maxBytesPerKey,
      }),
    ),
  );
  const evicted = words(own.evicted);
  // The evicted are out of the key's index already; their hashes share the key's slot.
  if (evicted.length > 0) await redis.unlink(...evicted.map((id) => storedResponseKey(keyId, id)));
  const total = namedReply(
    await runScript(
      redis,
      RESPONSE_TOTAL,
      [totalKeys.index, totalKeys.sizes],
      namedArguments({
        member: member(keyId, responseId),
        bytes,
        now: nowMs,
        ttl_ms: input.ttlMs,
        max_bytes: bounds.maxTotalBytes,
        removed: evicted.map((id) => member(keyId, id)).join(' '),
      }),
    ),
  );
  const dropped = words(total.dropped);
  // Each dropped response goes from its own key (its own slot).
  await Promise.all(
    dropped.map((entry) => {
      const at = entry.indexOf(':');
      return deleteOwn(redis, entry.slice(0, at), entry.slice(at + 1));
    }),
  );
  return { bytes, evictedForKey: evicted.length, evictedForTotal: dropped.length, totalBytes: numberField(total, 'total') };
}

/** Deletes one key's stored response and forgets its size in the total; true when it existed. */
export async function deleteStoredResponse(
  redis: RedisClient,
  keyId: string,
  responseId: string,
  totalKeys: StoredResponsesTotalKeys,
  ttlMs: number,
): Promise<boolean> {
  const deleted = await deleteOwn(redis, keyId, responseId);
  await runScript(
    redis,
    RESPONSE_TOTAL,
    [totalKeys.index, totalKeys.sizes],
    namedArguments({ member: '', bytes: 0, now: Date.now(), ttl_ms: ttlMs, max_bytes: 0, removed: member(keyId, responseId) }),
  );
  return deleted;
}
