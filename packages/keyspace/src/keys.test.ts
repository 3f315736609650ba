import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { bucketPlacement } from './buckets.js';
import {
  authKeys,
  dailyKey,
  dedupKey,
  hourlyKey,
  keyModelTotalsKey,
  keyTotalsKey,
  METERED_KEYS,
  modelsKey,
  RECENT_KEYS,
  recentKey,
  spendKeyName,
  storedResponseKey,
  storedResponsesIndexKey,
  storedResponsesSizesKey,
  storedResponsesTotalKeys,
  teamSpendKeyName,
  teamTotalsKey,
  windowKeyList,
} from './keys.js';
import { v1DedupKey, v1KeyIdIndex, v1KeyTotalsKey, v1ModelTotalsKey } from './migrations/v1-to-v2.js';
import { DAY_MS } from './spend.js';

const KEY = 'key_AbCdEfGh12345678';

describe('key names', () => {
  // The names on the wire: data written by earlier releases must stay where these find it.
  it('are the ones every release has written', () => {
    const auth = authKeys();
    expect(auth.secretIndex('ab12')).toBe('auth:key:ab12');
    expect(auth.record(KEY)).toBe(`auth:record:{${KEY}}`);
    expect(auth.keyIds).toBe('auth:key-ids');
    expect(auth.layout).toBe('auth:layout');
    expect(windowKeyList(authKeys('test:').window(KEY))).toEqual([
      `test:window:{${KEY}}:requests`,
      `test:window:{${KEY}}:tokens`,
      `test:window:{${KEY}}:charges`,
      `test:window:{${KEY}}:pending`,
    ]);
    expect(spendKeyName(KEY)).toBe(`metering:spend:{${KEY}}`);
    expect(keyTotalsKey(KEY)).toBe(`metering:key:{${KEY}}`);
    expect(keyModelTotalsKey(KEY, 'sim-mini')).toBe(`metering:key:{${KEY}}:model:sim-mini`);
    expect(dedupKey('USAGE', KEY)).toBe(`metering:dedup:{${KEY}}:USAGE`);
    expect(storedResponseKey(KEY, 'resp_1')).toBe(`metering:response:{${KEY}}:resp_1`);
    expect(hourlyKey(KEY, 'sim-mini', 20_000)).toBe(`metering:usage:{${KEY}}:sim-mini:h:20000`);
    expect(dailyKey(KEY, 'sim-mini', 24_311)).toBe(`metering:usage:{${KEY}}:sim-mini:d:24311`);
    expect(modelsKey(KEY)).toBe(`metering:usage:{${KEY}}:models`);
    expect(recentKey(KEY)).toBe(`metering:recent:{${KEY}}`);
    expect(METERED_KEYS).toBe('metering:keys');
    expect(RECENT_KEYS).toBe('metering:recent-keys');
  });

  it('of the earlier layout are the ones it wrote', () => {
    expect(v1KeyIdIndex(authKeys(), KEY)).toBe(`auth:key-id:${KEY}`);
    expect(v1KeyTotalsKey(KEY)).toBe(`metering:key:${KEY}`);
    expect(v1ModelTotalsKey('sim-mini')).toBe('metering:model:sim-mini');
    expect(v1DedupKey('USAGE')).toBe('metering:dedup:USAGE');
  });

  // A script's keys must share a cluster slot: Redis Cluster refuses a script across slots.
  it("put everything a request's scripts touch in its key id's slot", () => {
    const slot = calculateSlot(authKeys().record(KEY));
    const buckets = bucketPlacement(KEY, 'sim-mini', Date.UTC(2026, 10, 25, 8), { hourlyMs: DAY_MS, dailyMs: DAY_MS });
    const names = [
      ...windowKeyList(authKeys().window(KEY)),
      spendKeyName(KEY),
      keyTotalsKey(KEY),
      keyModelTotalsKey(KEY, 'sim-mini'),
      dedupKey('USAGE', KEY),
      buckets.hourly,
      buckets.daily,
      buckets.models,
      buckets.recent,
    ];
    for (const name of names) expect(calculateSlot(name), name).toBe(slot);
  });

  it("put a key's stored responses and their index in its key id's slot, and the store's total in one slot", () => {
    const slot = calculateSlot(storedResponseKey(KEY, 'resp_1'));
    for (const name of [storedResponsesIndexKey(KEY), storedResponsesSizesKey(KEY)]) expect(calculateSlot(name), name).toBe(slot);
    const total = storedResponsesTotalKeys();
    expect(total).toEqual({ index: 'metering:responses:{responses}', sizes: 'metering:response-sizes:{responses}' });
    expect(calculateSlot(total.sizes)).toBe(calculateSlot(total.index));
  });

  it("put a team member's data, and its team's, in the team's slot, apart from the key's own", () => {
    const team = 'team_ABCDEFGHIJKLMNOP';
    const auth = authKeys();
    const slot = calculateSlot(auth.team(team));
    const buckets = bucketPlacement({ keyId: KEY, teamId: team }, 'sim-mini', Date.UTC(2026, 10, 25, 8), { hourlyMs: DAY_MS, dailyMs: DAY_MS });
    const names = [
      auth.record(KEY, team),
      ...windowKeyList(auth.window(KEY, team)),
      spendKeyName(KEY, team),
      keyTotalsKey(KEY, team),
      keyModelTotalsKey(KEY, 'sim-mini', team),
      dedupKey('USAGE', KEY, team),
      buckets.hourly,
      buckets.daily,
      buckets.models,
      buckets.recent,
      auth.teamKeys(team),
      ...windowKeyList(auth.teamWindow(team)),
      teamSpendKeyName(team),
      teamTotalsKey(team),
    ];
    for (const name of names) expect(calculateSlot(name), name).toBe(slot);
    expect(auth.record(KEY, team)).toBe(`auth:record:{${team}}:${KEY}`);
    expect(spendKeyName(KEY, team)).toBe(`metering:spend:{${team}}:${KEY}`);
    // A key without a team keeps its own names ('' is no team).
    expect(auth.record(KEY, '')).toBe(auth.record(KEY));
    expect(spendKeyName(KEY, team)).not.toBe(spendKeyName(KEY));
  });
});

describe('bucket placement', () => {
  it("names an event's hour and day fields and when their hashes expire", () => {
    const at = Date.UTC(2026, 10, 25, 8, 30);
    const placement = bucketPlacement(KEY, 'sim-mini', at, { hourlyMs: 2 * DAY_MS, dailyMs: 3 * DAY_MS });
    expect(placement).toMatchObject({ hourField: '8:', dayField: '25:' });
    expect(placement.hourlyExpiresAtMs).toBe(Date.UTC(2026, 10, 26) + 2 * DAY_MS);
    expect(placement.dailyExpiresAtMs).toBe(Date.UTC(2026, 11, 1) + 3 * DAY_MS);
  });
});

describe('stored responses', () => {
  it("live in their owner's slot, and another key's id names another key", () => {
    expect(calculateSlot(storedResponseKey(KEY, 'resp_1'))).toBe(calculateSlot(keyTotalsKey(KEY)));
    expect(storedResponseKey('key_Other00000000000', 'resp_1')).not.toBe(storedResponseKey(KEY, 'resp_1'));
  });
});
