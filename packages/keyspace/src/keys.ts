/**
 * Every Redis key name of the gateway, built from its parts: auth and metering call these and
 * never spell a key themselves. docs/keyspace.md lists each key with its type, owner, time to live
 * and the scripts that touch it.
 *
 * Hash tags: everything one request touches (a key's record, its quota window, its spend, its
 * metered totals, buckets and de-duplication records) carries one hash tag, so it lives in one
 * Redis Cluster slot and one script may touch it all. For a key without a team the tag is its key
 * id (`{<key_id>}`); for a member of a team it is the team id, followed by the key id
 * (`{<team_id>}:<key_id>`), so that the key's data and its team's (record, window, spend, totals)
 * share the team's slot and one script decides or meters a request against both. A key's team is
 * fixed when the key is created, so its names never move. Every per-key builder takes the team id
 * as an optional last argument: absent or '' for a key without a team. Only the secret's index
 * (`key:<sha256>`), the sets of key and team ids, the key id -> team id index and metering's sets
 * of keys are elsewhere: no script touches them together with a key's data.
 */

/** The prefix of auth's keys (AUTH_REDIS_PREFIX), unless an environment or a test chooses another. */
export const DEFAULT_AUTH_PREFIX = 'auth:';

/** The hash tag of a key id: what puts a key's data in one cluster slot. */
export function keyIdTag(keyId: string): string {
  return `{${keyId}}`;
}

/** The hash tag of a team id: what puts a team's data, and its keys', in one cluster slot. */
export function teamIdTag(teamId: string): string {
  return `{${teamId}}`;
}

/**
 * What names a key's data: `{<key_id>}` for a key without a team, `{<team_id>}:<key_id>` for a
 * member of a team (its team's slot).
 */
export function keyTag(keyId: string, teamId?: string): string {
  return teamId ? `${teamIdTag(teamId)}:${keyId}` : keyIdTag(keyId);
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
  /** hash: a key's record (plan, name, overrides, revoked, team_id, ...), in its key id's slot (its team's for a member). */
  record(keyId: string, teamId?: string): string;
  /** set: every key id. */
  readonly keyIds: string;
  /** string: the layout every key is in, once it is (see migrations/v1-to-v2.ts). */
  readonly layout: string;
  /** A key's quota window: `<prefix>window:{<key_id>}:requests|tokens|charges|pending` (`{<team_id>}:<key_id>` for a member). */
  window(keyId: string, teamId?: string): QuotaWindowKeys;
  /** hash: key id -> team id, for every key in a team (a key without a team is not in it); written once per key. */
  readonly keyTeams: string;
  /** set: every team id. */
  readonly teamIds: string;
  /** hash: a team's record (name, limits, budgets, allow-list, created_at_ms), in the team's slot. */
  team(teamId: string): string;
  /** set: the ids of the keys created in a team, in the team's slot. */
  teamKeys(teamId: string): string;
  /** A team's quota window: `<prefix>team-window:{<team_id>}:requests|tokens|charges|pending`. */
  teamWindow(teamId: string): QuotaWindowKeys;
  /** string: an admin token's id, by the SHA-256 of its secret (hex); written once. */
  adminTokenIndex(secretHash: string): string;
  /** hash: an admin token's record (token_id, name, role, created_at_ms, created_by, revoked). */
  adminToken(tokenId: string): string;
  /** set: every admin token id. */
  readonly adminTokenIds: string;
  /** stream: the audit trail of admin changes, trimmed by age (MINID) on each write. */
  readonly audit: string;
}

function windowNames(base: string): QuotaWindowKeys {
  return { requests: `${base}requests`, tokens: `${base}tokens`, charges: `${base}charges`, pending: `${base}pending` };
}

/** auth's key names under `prefix` (AUTH_REDIS_PREFIX; metering names the windows it settles with it too). */
export function authKeys(prefix: string = DEFAULT_AUTH_PREFIX): AuthKeys {
  return {
    prefix,
    secretIndex: (secretHash) => `${prefix}key:${secretHash}`,
    record: (keyId, teamId) => `${prefix}record:${keyTag(keyId, teamId)}`,
    keyIds: `${prefix}key-ids`,
    layout: `${prefix}layout`,
    window: (keyId, teamId) => windowNames(`${prefix}window:${keyTag(keyId, teamId)}:`),
    keyTeams: `${prefix}key-teams`,
    teamIds: `${prefix}team-ids`,
    team: (teamId) => `${prefix}team:${teamIdTag(teamId)}`,
    teamKeys: (teamId) => `${prefix}team-keys:${teamIdTag(teamId)}`,
    teamWindow: (teamId) => windowNames(`${prefix}team-window:${teamIdTag(teamId)}:`),
    adminTokenIndex: (secretHash) => `${prefix}admin-token-secret:${secretHash}`,
    adminToken: (tokenId) => `${prefix}admin-token:${keyIdTag(tokenId)}`,
    adminTokenIds: `${prefix}admin-token-ids`,
    audit: `${prefix}audit`,
  };
}

/** hash: a key's spend per UTC day (`d:<day>`) and month (`m:<month>`), pico-USD; metering writes, auth reads. */
export function spendKeyName(keyId: string, teamId?: string): string {
  return `metering:spend:${keyTag(keyId, teamId)}`;
}

/** hash: a team's spend per UTC day and month over all its keys, pico-USD, as spendKeyName's; metering writes, auth reads. */
export function teamSpendKeyName(teamId: string): string {
  return `metering:team-spend:${teamIdTag(teamId)}`;
}

/**
 * zset: the budget holds of a key's requests in flight (request's charge id -> when its hold lapses,
 * Unix ms); the amounts are in its spend hash (`h:<charge id>`, their sum `held`). See budget-holds.ts.
 */
export function budgetHoldsKeyName(keyId: string, teamId?: string): string {
  return `metering:spend-holds:${keyTag(keyId, teamId)}`;
}

/** zset: a team's budget holds, as budgetHoldsKeyName's, by `<key_id>:<charge id>`; amounts in its spend hash. */
export function teamBudgetHoldsKeyName(teamId: string): string {
  return `metering:team-spend-holds:${teamIdTag(teamId)}`;
}

/** hash: a team's running totals over all its keys (the fields of keyTotalsKey's). */
export function teamTotalsKey(teamId: string): string {
  return `metering:team:${teamIdTag(teamId)}`;
}

/** hash: key id -> team id of every key metering metered in a team; written before its first event. */
export const METERED_KEY_TEAMS = 'metering:key-teams';

/** The prefix of metering's per-key totals (`metering:key:{<key_id>}`; the earlier layout had no tag). */
export const KEY_TOTALS_PREFIX = 'metering:key:';

/** hash: a key's running totals. */
export function keyTotalsKey(keyId: string, teamId?: string): string {
  return `${KEY_TOTALS_PREFIX}${keyTag(keyId, teamId)}`;
}

/** hash: a key's running totals of one model. */
export function keyModelTotalsKey(keyId: string, modelId: string, teamId?: string): string {
  return `${keyTotalsKey(keyId, teamId)}:model:${modelId}`;
}

/** The prefix of the de-duplication sets. */
export const DEDUP_PREFIX = 'metering:dedup:';

/** zset: a key's events metered from one usage stream (event id -> stream sequence). */
export function dedupKey(stream: string, keyId: string, teamId?: string): string {
  return `${DEDUP_PREFIX}${keyTag(keyId, teamId)}:${stream}`;
}

/** set: the key ids with metered usage. */
export const METERED_KEYS = 'metering:keys';

/** hash: a key's hourly buckets of one model and UTC day (days since 1970-01-01). */
export function hourlyKey(keyId: string, modelId: string, day: number, teamId?: string): string {
  return `metering:usage:${keyTag(keyId, teamId)}:${modelId}:h:${day}`;
}

/** hash: a key's daily buckets of one model and UTC month (year * 12 + month - 1). */
export function dailyKey(keyId: string, modelId: string, month: number, teamId?: string): string {
  return `metering:usage:${keyTag(keyId, teamId)}:${modelId}:d:${month}`;
}

/** set: the models a key used. */
export function modelsKey(keyId: string, teamId?: string): string {
  return `metering:usage:${keyTag(keyId, teamId)}:models`;
}

/** list: a key's latest requests (JSON), newest first. */
export function recentKey(keyId: string, teamId?: string): string {
  return `metering:recent:${keyTag(keyId, teamId)}`;
}

/** zset: key id -> when its latest requests were last listed (Unix ms). */
export const RECENT_KEYS = 'metering:recent-keys';

/**
 * hash: one stored response of the Responses API (always under the key id's own tag, team or not:
 * no script touches a stored response together with the key's other data) (`response`: the Response object as answered,
 * `input`: the input items that led to it, both JSON), under its owner's key id: another key's id
 * names another key, so a response is found only by the key that created it. In its owner's slot,
 * so its one key (and every response of the key) lives in one cluster slot.
 */
export function storedResponseKey(keyId: string, responseId: string): string {
  return `metering:response:${keyIdTag(keyId)}:${responseId}`;
}

/**
 * zset: a key's stored responses, response id -> when it was stored (Unix ms): which is oldest
 * when the key is over its bound (see scripts/response-store.ts). In the key id's slot, beside
 * the responses themselves.
 */
export function storedResponsesIndexKey(keyId: string): string {
  return `metering:responses:${keyIdTag(keyId)}`;
}

/** hash: the stored size (bytes) of each of a key's stored responses by response id, and `total`. */
export function storedResponsesSizesKey(keyId: string): string {
  return `metering:response-sizes:${keyIdTag(keyId)}`;
}

/** The two keys that hold every stored response's size, for the store's total bound. */
export interface StoredResponsesTotalKeys {
  /** zset: `<key_id>:<response_id>` -> when it was stored (Unix ms): which is oldest when over the bound. */
  index: string;
  /** hash: each stored response's size (bytes) by `<key_id>:<response_id>`, and `total`. */
  sizes: string;
}

/**
 * The keys of the store's total bound, all in one slot (`{responses}`): the one place that sees
 * the total. `tag` names another set of them (tests sharing a Redis).
 */
export function storedResponsesTotalKeys(tag = 'responses'): StoredResponsesTotalKeys {
  return { index: `metering:responses:{${tag}}`, sizes: `metering:response-sizes:{${tag}}` };
}
