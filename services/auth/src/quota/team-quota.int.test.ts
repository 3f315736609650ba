import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authKeys, spendDayField, spendKeyName, spendMonthField, teamSpendKeyName, windowKeyList } from '@gateway/keyspace';
import { hashSecret } from '../shared/ids.js';
import { KeyStore } from '../keys/key-store.js';
import { TeamNotFoundError } from '../shared/input-error.js';
import { loadPlans } from './plans.js';
import { QuotaLimiter, type QuotaDecision } from './quota-limiter.js';
import { TeamStore, type NewTeam } from '../teams/team-store.js';
import { usePrefixedRedis } from '../testing/prefixed-redis.js';

const plans = loadPlans();
const scope = usePrefixedRedis();
const { prefix } = scope;
let keys: KeyStore;
let teams: TeamStore;
const spendHashes: string[] = [];
let now = Date.UTC(2026, 10, 24, 12, 0, 0);
const clock = () => now;

beforeAll(() => {
  keys = new KeyStore(scope.redis, { prefix });
  teams = new TeamStore(scope.redis, { prefix });
});

afterAll(async () => {
  // One DEL each: on a Redis Cluster the teams' hashes live in different slots.
  for (const name of spendHashes) await scope.redis.del(name);
});

/** A team and two pro keys in it (limits far above the team's), each checked through its own replica. */
async function teamOfTwo(limits: Omit<NewTeam, 'name'>) {
  const team = await teams.create({ name: `team ${randomUUID()}`, ...limits });
  spendHashes.push(teamSpendKeyName(team.team_id));
  const members = await Promise.all([0, 1].map(() => keys.create({ plan: 'pro', team_id: team.team_id })));
  const limiters = [
    new QuotaLimiter(scope.redis, plans, { prefix, now: clock }),
    new QuotaLimiter(scope.other, plans, { prefix, now: clock, keys: new KeyStore(scope.other, { prefix }) }),
  ];
  const check = (member: number, tokens: number, on = member) => limiters[on]!.check(hashSecret(members[member]!.secret), randomUUID(), tokens, 'reserve');
  return { team, members, limiters, check };
}

function live(decision: QuotaDecision) {
  if (decision.kind === 'unknown_key' || decision.kind === 'revoked') throw new Error(`expected a live key, got ${decision.kind}`);
  return decision;
}

describe('a team of keys', () => {
  it("allows exactly the team's requests per minute over two keys and two replicas, then says it is the team's limit", async () => {
    const { check } = await teamOfTwo({ requests_per_minute: 30 });
    const decisions = (await Promise.all(Array.from({ length: 120 }, (_, index) => check(index % 2, 10, Math.floor(index / 2) % 2)))).map(live);
    expect(decisions.filter((decision) => decision.kind === 'allow')).toHaveLength(30);
    const denied = decisions.filter((decision) => decision.kind !== 'allow');
    expect(denied).toHaveLength(90);
    for (const decision of denied) {
      expect(decision).toMatchObject({ kind: 'deny_requests', deniedByTeam: true });
      expect(decision.retryAfterMs).toBeGreaterThan(0);
      expect(decision.team?.requests).toMatchObject({ limit: 30, used: 30 });
    }
    // Each key alone is far below its own (pro) limit.
    expect(decisions[0]!.requests.limit).toBeGreaterThan(30);
  });

  it("charges a request's tokens to the team, and a settlement in either window frees them for the other key", async () => {
    const { members, limiters, check } = await teamOfTwo({ tokens_per_minute: 100 });
    const first = live(await check(0, 60));
    expect(first.kind).toBe('allow');
    expect(first.reservationId).toMatch(new RegExp(`^${members[0]!.key.key_id}:`));
    expect(live(await check(1, 50))).toMatchObject({ kind: 'deny_tokens', deniedByTeam: true });
    expect(await limiters[1]!.settle(first.reservationId, 10)).toMatchObject({ outcome: 'settled', deltaTokens: -50 });
    const second = live(await check(1, 50));
    expect(second.kind).toBe('allow');
    expect(second.team?.tokens).toMatchObject({ limit: 100, used: 60 });
  });

  it("refuses every key of the team once the team's daily budget is spent, not a key outside it", async () => {
    now = Date.UTC(2026, 10, 24, 22, 0, 0);
    const { team, members, check } = await teamOfTwo({ daily_budget: 1_000 });
    const outsider = await keys.create({ plan: 'pro' });
    const outsideLimiter = new QuotaLimiter(scope.redis, plans, { prefix, now: clock });
    expect(live(await check(0, 1))).toMatchObject({ kind: 'allow', team: { budget: { limited: true, remainingPicoUsd: 1_000_000_000 } } });
    // What metering writes for the team's events: the team's spend hash, beside each key's own.
    await scope.redis.hincrby(teamSpendKeyName(team.team_id), spendDayField(now), 1_000_000_000);
    await scope.redis.hincrby(teamSpendKeyName(team.team_id), spendMonthField(now), 1_000_000_000);
    for (const member of [0, 1]) {
      const decision = live(await check(member, 1));
      expect(decision).toMatchObject({ kind: 'over_budget', deniedByTeam: true, team: { budget: { remainingPicoUsd: 0, monthlyExhausted: false } } });
      expect(decision.retryAfterMs).toBe(2 * 3_600_000);
      expect(decision.budget.limited).toBe(false);
    }
    expect(live(await outsideLimiter.check(hashSecret(outsider.secret), randomUUID(), 1, 'reserve')).kind).toBe('allow');
    expect(await scope.redis.exists(spendKeyName(members[0]!.key.key_id, team.team_id))).toBe(0);
    now = Date.UTC(2026, 10, 25, 0, 0, 1);
    expect(live(await check(1, 1)).kind).toBe('allow');
  });

  it("keeps a member key's data in its team's slot, and returns the team's allow-list with each decision", async () => {
    const { team, members, check } = await teamOfTwo({ allowed_models: ['sim-mini', 'gpt-4o*'] });
    const keyId = members[0]!.key.key_id;
    const names = authKeys(prefix);
    // Redis Cluster hashes the first {...} of a name: the team id, for the team's and the key's data.
    const tagOf = (name: string) => /\{([^}]*)\}/.exec(name)?.[1];
    for (const name of [
      names.team(team.team_id),
      names.record(keyId, team.team_id),
      ...windowKeyList(names.window(keyId, team.team_id)),
      spendKeyName(keyId, team.team_id),
    ])
      expect(tagOf(name)).toBe(team.team_id);
    expect(await scope.redis.hgetall(names.secretIndex(hashSecret(members[0]!.secret)))).toEqual({ key_id: keyId, team_id: team.team_id });
    expect(await scope.redis.hget(names.keyTeams, keyId)).toBe(team.team_id);
    expect(await keys.get(keyId)).toMatchObject({ key_id: keyId, team_id: team.team_id });
    expect((await keys.list(team.team_id)).map((key) => key.key_id).sort()).toEqual(members.map((member) => member.key.key_id).sort());
    expect(live(await check(0, 1))).toMatchObject({ kind: 'allow', team: { teamId: team.team_id, allowedModels: ['sim-mini', 'gpt-4o*'] } });
  });

  it('applies a change of the team to the next decision, on every replica', async () => {
    const { team, check } = await teamOfTwo({});
    expect(live(await check(0, 1)).team?.requests.limit).toBe(-1);
    await teams.update(team.team_id, { requests_per_minute: 1 });
    expect(live(await check(1, 1, 1)).kind).toBe('allow');
    expect(live(await check(0, 1, 0))).toMatchObject({ kind: 'deny_requests', deniedByTeam: true });
    await teams.update(team.team_id, { requests_per_minute: null });
    expect(live(await check(0, 1, 1)).kind).toBe('allow');
  });

  it('deletes a team only once its keys are revoked, and creates no key in a team that does not exist', async () => {
    const { team, members } = await teamOfTwo({});
    expect(await teams.delete(team.team_id)).toBe('has_keys');
    await keys.revoke(members[0]!.key.key_id);
    expect((await teams.get(team.team_id))?.live_keys).toBe(1);
    await keys.revoke(members[1]!.key.key_id);
    expect(await teams.delete(team.team_id)).toBe('deleted');
    expect(await teams.get(team.team_id)).toBeUndefined();
    expect((await teams.list()).map((listed) => listed.team_id)).not.toContain(team.team_id);
    await expect(keys.create({ plan: 'pro', team_id: team.team_id })).rejects.toBeInstanceOf(TeamNotFoundError);
    await expect(keys.create({ plan: 'pro', team_id: 'team_0000000000000000' })).rejects.toBeInstanceOf(TeamNotFoundError);
  });
});

describe('request bodies in the request log', () => {
  const check = (secret: string) => new QuotaLimiter(scope.redis, plans, { prefix, now: clock }).check(hashSecret(secret), randomUUID(), 10, 'reserve');

  it("are logged for a key whose log_bodies is on or whose team's is, and for no other key; a change applies from the next decision", async () => {
    const plain = await keys.create({ plan: 'pro' });
    const own = await keys.create({ plan: 'pro', log_bodies: true });
    expect(live(await check(plain.secret)).logBodies).toBe(false);
    expect(live(await check(own.secret)).logBodies).toBe(true);
    expect((await keys.get(own.key.key_id))?.log_bodies).toBe(true);

    const team = await teams.create({ name: `team ${randomUUID()}`, log_bodies: true });
    spendHashes.push(teamSpendKeyName(team.team_id));
    const member = await keys.create({ plan: 'pro', team_id: team.team_id });
    expect(live(await check(member.secret)).logBodies).toBe(true);

    await teams.update(team.team_id, { log_bodies: false });
    expect((await teams.get(team.team_id))?.log_bodies).toBeUndefined();
    expect(live(await check(member.secret)).logBodies).toBe(false);
    await keys.update(own.key.key_id, { log_bodies: false });
    expect(live(await check(own.secret)).logBodies).toBe(false);
  });
});
