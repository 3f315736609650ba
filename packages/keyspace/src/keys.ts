/**
 * Every Redis key name of the gateway, built from its parts: auth and metering call these and
 * never spell a key themselves. docs/keyspace.md lists each key with its type, owner, time to live
 * and the scripts that touch it.
 *
 * Hash tags: everything one request touches (a key's record, its quota window, its spend, its
 * metered totals, buckets and de-duplication records) carries the key id as its hash tag
 * (`{<key_id>}`), so it lives in one Redis Cluster slot and one script may touch it all. Only the
 * secret's index (`key:<sha256>`), the set of key ids and metering's sets of keys are elsewhere:
 * no script touches them together with a key's data.
 */

/** The prefix of auth's keys (AUTH_REDIS_PREFIX), unless an environment or a test chooses another. */
export const DEFAULT_AUTH_PREFIX = 'auth:';

/** The hash tag of a key id: what puts a key's data in one cluster slot. */
export function keyIdTag(keyId: string): string {
  return `{${keyId}}`;
}

/** The names of one API key's quota window (see window.ts). */
export interface QuotaWindowKeys {
  /** zset: request id -> allowed at (Unix ms). */
  requests: string;
  /** zset: charge id -> charged at (Unix ms). */
  tokens: string;
  /** hash: `t:<id>` tokens charged, `s:<id>` settled, `total`, `window_ms`. */
  charges: string;
  /** zset: unsettled charges that left the window, kept for a late settlement. */
  pending: string;
}

/** The window's names in the order the scripts declare them: R, T, H, P. */
export function windowKeyList(window: QuotaWindowKeys): [string, string, string, string] {
  return [window.requests, window.tokens, window.charges, window.pending];
}

/** auth's keys under one prefix. */
export interface AuthKeys {
  readonly prefix: string;
  /** hash `{key_id}`: a secret's index, by the SHA-256 of the secret (hex); written once. */
  secretIndex(secretHash: string): string;
  /** hash: a key's record (plan, name, overrides, revoked, ...), in its key id's slot. */
  record(keyId: string): string;
  /** set: every key id. */
  readonly keyIds: string;
  /** string: the layout every key is in, once it is (see migrations/v1-to-v2.ts). */
  readonly layout: string;
  /** A key's quota window: `<prefix>window:{<key_id>}:requests|tokens|charges|pending`. */
  window(keyId: string): QuotaWindowKeys;
  /** string: an admin token's id, by the SHA-256 of its secret (hex); written once. */
  adminTokenIndex(secretHash: string): string;
  /** hash: an admin token's record (token_id, name, role, created_at_ms, created_by, revoked). */
  adminToken(tokenId: string): string;
  /** set: every admin token id. */
  readonly adminTokenIds: string;
  /** stream: the audit trail of admin changes, trimmed by age (MINID) on each write. */
  readonly audit: string;
}

/** auth's key names under `prefix` (AUTH_REDIS_PREFIX; metering names the windows it settles with it too). */
export function authKeys(prefix: string = DEFAULT_AUTH_PREFIX): AuthKeys {
  return {
    prefix,
    secretIndex: (secretHash) => `${prefix}key:${secretHash}`,
    record: (keyId) => `${prefix}record:${keyIdTag(keyId)}`,
    keyIds: `${prefix}key-ids`,
    layout: `${prefix}layout`,
    window: (keyId) => {
      const base = `${prefix}window:${keyIdTag(keyId)}:`;
      return { requests: `${base}requests`, tokens: `${base}tokens`, charges: `${base}charges`, pending: `${base}pending` };
    },
    adminTokenIndex: (secretHash) => `${prefix}admin-token-secret:${secretHash}`,
    adminToken: (tokenId) => `${prefix}admin-token:${keyIdTag(tokenId)}`,
    adminTokenIds: `${prefix}admin-token-ids`,
    audit: `${prefix}audit`,
  };
}

/** hash: a key's spend per UTC day (`d:<day>`) and month (`m:<month>`), pico-USD; metering writes, auth reads. */
export function spendKeyName(keyId: string): string {
  return `metering:spend:${keyIdTag(keyId)}`;
}

/** The prefix of metering's per-key totals (`metering:key:{<key_id>}`; the earlier layout had no tag). */
export const KEY_TOTALS_PREFIX = 'metering:key:';

/** hash: a key's running totals. */
export function keyTotalsKey(keyId: string): string {
  return `${KEY_TOTALS_PREFIX}${keyIdTag(keyId)}`;
}

/** hash: a key's running totals of one model. */
export function keyModelTotalsKey(keyId: string, modelId: string): string {
  return `${keyTotalsKey(keyId)}:model:${modelId}`;
}

/** The prefix of the de-duplication sets. */
export const DEDUP_PREFIX = 'metering:dedup:';

/** zset: a key's events metered from one usage stream (event id -> stream sequence). */
export function dedupKey(stream: string, keyId: string): string {
  return `${DEDUP_PREFIX}${keyIdTag(keyId)}:${stream}`;
}

/** set: the key ids with metered usage. */
export const METERED_KEYS = 'metering:keys';

/** hash: a key's hourly buckets of one model and UTC day (days since 1970-01-01). */
export function hourlyKey(keyId: string, modelId: string, day: number): string {
  return `metering:usage:${keyIdTag(keyId)}:${modelId}:h:${day}`;
}

/** hash: a key's daily buckets of one model and UTC month (year * 12 + month - 1). */
export function dailyKey(keyId: string, modelId: string, month: number): string {
  return `metering:usage:${keyIdTag(keyId)}:${modelId}:d:${month}`;
}

/** set: the models a key used. */
export function modelsKey(keyId: string): string {
  return `metering:usage:${keyIdTag(keyId)}:models`;
}

/** list: a key's latest requests (JSON), newest first. */
export function recentKey(keyId: string): string {
  return `metering:recent:${keyIdTag(keyId)}`;
}

/** zset: key id -> when its latest requests were last listed (Unix ms). */
export const RECENT_KEYS = 'metering:recent-keys';

/**
 * hash: one stored response of the Responses API (`response`: the Response object as answered,
 * `input`: the input items that led to it, both JSON), under its owner's key id: another key's id
 * names another key, so a response is found only by the key that created it. In its owner's slot,
 * so its one key (and every response of the key) lives in one cluster slot.
 */
export function storedResponseKey(keyId: string, responseId: string): string {
  return `metering:response:${keyIdTag(keyId)}:${responseId}`;
}
