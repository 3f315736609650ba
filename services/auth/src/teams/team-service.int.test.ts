/**
 * The TeamService and the team fields of the AuthService over real gRPC, on a server with its own
 * Redis prefix: teams created, read, listed, changed and deleted; a key created in a team, listed
 * by team, and decided against its team's limit with the team's state in the response.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callUnary, createClient, type GatewayError, GrpcStatus, type GatewayServer } from '@gateway/grpc';
import { teamSpendKeyName } from '@gateway/keyspace';
import {
  loadGatewayGrpc,
  type AuthServiceClient,
  type CreateKeyRequest,
  type CreateTeamRequest,
  type DeleteTeamRequest,
  type DeleteTeamResponseOutput,
  type GetTeamRequest,
  type ListTeamsRequest,
  type ListTeamsResponseOutput,
  type TeamOutput,
  type TeamServiceClient,
  type UpdateTeamRequest,
} from '@gateway/proto';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { eventually, redisUrl } from '@gateway/testing';
import { type AuthCalls, authCalls } from '../testing/auth-calls.js';
import { startAuthServer } from '../testing/auth-server.js';
import { AuditLog } from '@gateway/keyspace';

const prefix = `test-${randomUUID()}:auth:`;
const options = { deadlineMs: 3_000 };
let redis: RedisClient;
let server: GatewayServer;
let auth: AuthServiceClient;
let teams: TeamServiceClient;
let keys: AuthCalls;
const created: string[] = [];

beforeAll(async () => {
  redis = connectRedis(await redisUrl());
  await eventually(() => redis.status === 'ready', 'Redis to be ready', 10_000, 20);
  const started = await startAuthServer(redis, prefix);
  server = started.server;
  const grpc = loadGatewayGrpc().gateway.auth.v1;
  auth = createClient(grpc.AuthService, started.address);
  teams = createClient(grpc.TeamService, started.address);
  keys = authCalls(auth, options);
});

afterAll(async () => {
  auth?.close();
  teams?.close();
  await server?.shutdown(1_000);
  await deleteMatching(redis, `${prefix}*`);
  for (const teamId of created) await redis.del(teamSpendKeyName(teamId));
  await redis.quit();
});

const createTeam = async (request: CreateTeamRequest) => {
  const team = await callUnary<CreateTeamRequest, TeamOutput>(teams, teams.CreateTeam, request, options);
  created.push(team.team_id!);
  return team;
};
const createKey = (request: CreateKeyRequest) => keys.createKey(request);
const check = (secret: string) => keys.checkKey({ api_key: secret, reserve_tokens: 10, request_id: randomUUID() });
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.fail('the call succeeded'),
    (error: unknown) => error as GatewayError,
  );

describe('TeamService', () => {
  it('creates, reads, lists, changes and deletes a team; refuses a team without a name or with plan_default', async () => {
    const team = await createTeam({
      name: 'research',
      requests_per_minute: { per_minute: 30 },
      daily_budget: { micro_usd: 2_500_000 },
      model_allow_list: { models: ['sim-mini', 'gpt-4o*'] },
    });
    expect(team).toMatchObject({
      team_id: expect.stringMatching(/^team_[A-Za-z0-9]{16}$/),
      name: 'research',
      requests_per_minute: { per_minute: 30 },
      tokens_per_minute: { unlimited: true },
      daily_budget: { micro_usd: 2_500_000 },
      monthly_budget: { unlimited: true },
      model_allow_list: { models: ['sim-mini', 'gpt-4o*'] },
      key_count: 0,
    });
    expect(await callUnary<GetTeamRequest, TeamOutput>(teams, teams.GetTeam, { team_id: team.team_id }, options)).toEqual(team);
    const listed = await callUnary<ListTeamsRequest, ListTeamsResponseOutput>(teams, teams.ListTeams, {}, options);
    expect(listed.teams.map((entry) => entry.team_id)).toContain(team.team_id);

    const changed = await callUnary<UpdateTeamRequest, TeamOutput>(
      teams,
      teams.UpdateTeam,
      {
        team_id: team.team_id,
        name: 'research 2',
        requests_per_minute: { unlimited: true },
        tokens_per_minute: { per_minute: 500 },
        clear_model_allow_list: true,
      },
      options,
    );
    expect(changed).toMatchObject({ name: 'research 2', requests_per_minute: { unlimited: true }, tokens_per_minute: { per_minute: 500 } });
    expect(changed.model_allow_list).toBeUndefined();

    expect(await failure(createTeam({ name: '' }))).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, param: 'name' });
    expect(await failure(createTeam({ name: 'x', daily_budget: { plan_default: true } }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      param: 'daily_budget',
    });
    expect(await failure(createTeam({ name: 'x', model_allow_list: { models: ['two words'] } }))).toMatchObject({ param: 'allowed_models' });

    expect(await callUnary<DeleteTeamRequest, DeleteTeamResponseOutput>(teams, teams.DeleteTeam, { team_id: team.team_id }, options)).toEqual({
      team_id: team.team_id,
    });
    expect(await failure(callUnary<GetTeamRequest, TeamOutput>(teams, teams.GetTeam, { team_id: team.team_id }, options))).toMatchObject({
      code: GrpcStatus.NOT_FOUND,
      reason: 'team_not_found',
    });
  });
});

describe('the audit trail of teams', () => {
  it('records who created, changed and deleted a team, with its public facts before and after', async () => {
    const actor = { subject: 'adt_auditor000000000', role: 'admin' as const, via: 'admin_token' as const };
    const asActor = { ...options, actor, requestId: 'req_team_audit' };
    const team = await callUnary<CreateTeamRequest, TeamOutput>(teams, teams.CreateTeam, { name: 'audited', daily_budget: { micro_usd: 1_000_000 } }, asActor);
    await callUnary<UpdateTeamRequest, TeamOutput>(teams, teams.UpdateTeam, { team_id: team.team_id, name: 'audited 2' }, asActor);
    await callUnary<DeleteTeamRequest, DeleteTeamResponseOutput>(teams, teams.DeleteTeam, { team_id: team.team_id }, asActor);
    // A refused change (no such team) is not a change: nothing is recorded for it.
    await failure(callUnary<UpdateTeamRequest, TeamOutput>(teams, teams.UpdateTeam, { team_id: 'team_0000000000000000', name: 'x' }, asActor));

    const entries = (await new AuditLog(redis, { prefix }).list({ target_id: team.team_id })).entries.reverse();
    expect(entries.map((entry) => entry.action)).toEqual(['team.create', 'team.update', 'team.delete']);
    for (const entry of entries)
      expect(entry).toMatchObject({ actor: { subject: actor.subject, role: 'admin', via: 'admin_token' }, request_id: 'req_team_audit' });
    const [created, updated, deleted] = entries.map((entry) => ({
      before: entry.before_json ? JSON.parse(entry.before_json) : undefined,
      after: entry.after_json ? JSON.parse(entry.after_json) : undefined,
    }));
    expect(created!.before).toBeUndefined();
    expect(created!.after).toMatchObject({ team_id: team.team_id, name: 'audited' });
    expect(updated).toMatchObject({ before: { name: 'audited' }, after: { name: 'audited 2' } });
    expect(deleted!.before).toMatchObject({ team_id: team.team_id, name: 'audited 2' });
    expect((await new AuditLog(redis, { prefix }).list({ target_id: 'team_0000000000000000' })).entries).toEqual([]);
  });
});

describe("a team's model allow-list", () => {
  it("refuses a model outside the team's list or the key's own, saying whose, and returns both lists", async () => {
    const team = await createTeam({ name: 'listed', model_allow_list: { models: ['sim-*'] } });
    const open = await createKey({ plan: 'PLAN_PRO', team_id: team.team_id! });
    const own = await createKey({ plan: 'PLAN_PRO', team_id: team.team_id!, allowed_models: { models: ['gpt-4o', 'sim-mini'] } });
    const decide = (secret: string, model: string) => keys.checkKey({ api_key: secret, reserve_tokens: 1, model, request_id: randomUUID() });

    expect(await decide(open.secret!, 'sim-mini')).toMatchObject({ decision: 'DECISION_ALLOW', model_allow_lists: [{ models: ['sim-*'] }] });
    const refused = await decide(open.secret!, 'gpt-4o');
    expect(refused).toMatchObject({ decision: 'DECISION_DENY_MODEL_NOT_ALLOWED', denied_by_team: true });
    expect(refused.message).toMatch(/team is not allowed to use the model `gpt-4o`/);

    expect(await decide(own.secret!, 'sim-mini')).toMatchObject({
      decision: 'DECISION_ALLOW',
      model_allow_lists: [{ models: ['gpt-4o', 'sim-mini'] }, { models: ['sim-*'] }],
    });
    expect(await decide(own.secret!, 'gpt-4o')).toMatchObject({ decision: 'DECISION_DENY_MODEL_NOT_ALLOWED', denied_by_team: true });
    const byKey = await decide(own.secret!, 'sim-max');
    expect(byKey.decision).toBe('DECISION_DENY_MODEL_NOT_ALLOWED');
    expect(byKey.denied_by_team ?? false).toBe(false);
  });
});

describe('keys of a team', () => {
  it("joins a key to its team at creation, lists a team's keys, and decides against the team's limit", async () => {
    const team = await createTeam({ name: 'limited', requests_per_minute: { per_minute: 1 }, model_allow_list: { models: ['sim-*'] } });
    const member = await createKey({ plan: 'PLAN_PRO', team_id: team.team_id! });
    expect(member.key).toMatchObject({ team_id: team.team_id });
    const loner = await createKey({ plan: 'PLAN_PRO' });
    expect(loner.key?.team_id ?? '').toBe('');

    const listed = await keys.listKeys({ team_id: team.team_id! });
    expect(listed.keys.map((key) => key.key_id)).toEqual([member.key!.key_id]);

    const allowed = await check(member.secret!);
    expect(allowed).toMatchObject({
      decision: 'DECISION_ALLOW',
      team_id: team.team_id,
      team_requests: { limit: 1, remaining: 0 },
      team_model_allow_list: { models: ['sim-*'] },
      reservation_id: expect.stringMatching(new RegExp(`^${member.key!.key_id}:`)),
    });
    const denied = await check(member.secret!);
    expect(denied).toMatchObject({ decision: 'DECISION_DENY_REQUEST_LIMIT', denied_by_team: true, team_id: team.team_id });
    expect(denied.message).toMatch(/^Rate limit reached on requests per minute of this key's team: limit 1, used 1\./);
    expect(Number(denied.retry_after_ms)).toBeGreaterThan(0);
    // The key's own window is far from its plan's limit.
    expect(Number(denied.requests?.remaining)).toBeGreaterThan(900);
    expect((await check(loner.secret!)).team_id ?? '').toBe('');

    expect(await failure(createKey({ plan: 'PLAN_PRO', team_id: 'team_0000000000000000' }))).toMatchObject({
      code: GrpcStatus.NOT_FOUND,
      reason: 'team_not_found',
    });
    expect(await failure(callUnary<DeleteTeamRequest, DeleteTeamResponseOutput>(teams, teams.DeleteTeam, { team_id: team.team_id }, options))).toMatchObject({
      code: GrpcStatus.FAILED_PRECONDITION,
      reason: 'team_has_keys',
    });
    await keys.revokeKey({ key_id: member.key!.key_id });
    expect((await callUnary<GetTeamRequest, TeamOutput>(teams, teams.GetTeam, { team_id: team.team_id }, options)).key_count).toBe(0);
    await callUnary<DeleteTeamRequest, DeleteTeamResponseOutput>(teams, teams.DeleteTeam, { team_id: team.team_id }, options);
    // A revoked member stays revoked once its team is gone.
    expect(await check(member.secret!)).toMatchObject({ decision: 'DECISION_DENY_INVALID_KEY', deny_reason: 'DENY_REASON_REVOKED' });
  });
});
