/**
 * The admin API's teams through fastify's inject(), on the real edge app with auth's TeamService
 * and AuthService faked through their own client interfaces: the exact answer to refused bodies,
 * the requests auth receives for accepted ones, and the JSON of a team; a key created in a team
 * and the keys of a team.
 */
import { describe, expect, it } from 'vitest';
import { MAX_ALLOW_LIST_ENTRIES, MAX_ALLOW_LIST_ENTRY_LENGTH } from '@gateway/catalog';
import { GatewayError } from '@gateway/grpc';
import type { AuthServiceClient, KeyInfoOutput, TeamOutput, TeamServiceClient } from '@gateway/proto';
import { fakeGrpcClient, injectAs, recordingEdge } from '../../testing/test-edge.js';

const ADMIN_TOKEN = 'admin-token-for-tests-0123456789abcdef';
const TEAM_ID = 'team_0123456789abcdef';

const TEAM: TeamOutput = {
  team_id: TEAM_ID,
  name: 'research',
  created_at_ms: 1_700_000_000_500,
  requests_per_minute: { per_minute: 30, value: 'per_minute' },
  tokens_per_minute: { unlimited: true, value: 'unlimited' },
  daily_budget: { micro_usd: 2_500_000, value: 'micro_usd' },
  monthly_budget: { unlimited: true, value: 'unlimited' },
  model_allow_list: { models: ['sim-mini', 'gpt-4o*'] },
  key_count: 2,
};

const TEAM_JSON = {
  object: 'team',
  id: TEAM_ID,
  name: 'research',
  created_at: 1_700_000_000,
  limits: { requests_per_minute: 30, tokens_per_minute: null },
  budgets: { daily_usd: 2.5, monthly_usd: null },
  allowed_models: ['sim-mini', 'gpt-4o*'],
  allowed_mcp_tools: null,
  key_count: 2,
  log_bodies: false,
};

const MEMBER: KeyInfoOutput = {
  key_id: 'key_0123456789abcdef',
  plan: 'PLAN_PRO',
  name: '',
  created_at_ms: 1_700_000_000_000,
  revoked: false,
  requests_per_minute: { per_minute: 600, value: 'per_minute' },
  tokens_per_minute: { per_minute: 600_000, value: 'per_minute' },
  routing_policy: '',
  catalog_fallbacks: false,
  team_id: TEAM_ID,
};

const inUse = GatewayError.of('team_has_keys', 'This team still has live keys: revoke them before deleting the team.', { param: 'team_id' });
const { app, received } = recordingEdge({ EDGE_ADMIN_TOKEN: ADMIN_TOKEN }, (record) => ({
  auth: fakeGrpcClient<AuthServiceClient>({ CreateKey: { key: MEMBER, secret: 'br-created-secret' }, ListKeys: { keys: [MEMBER] } }, record),
  teams: fakeGrpcClient<TeamServiceClient>(
    {
      CreateTeam: TEAM,
      UpdateTeam: TEAM,
      GetTeam: GatewayError.of('team_not_found', 'No team has this id.', { param: 'team_id' }),
      ListTeams: { teams: [TEAM] },
      DeleteTeam: inUse,
    },
    record,
  ),
}));

function admin(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) {
  return injectAs(app(), ADMIN_TOKEN, method, url, body);
}

const REFUSED: Array<[string, unknown, string | null, string, string]> = [
  ['no name', {}, 'name', "'name' must be a string of 1 to 200 characters.", 'invalid_value'],
  ['an empty name', { name: '' }, 'name', "'name' must be a string of 1 to 200 characters.", 'invalid_value'],
  [
    'an unknown field',
    { name: 'a', plan: 'pro' },
    'plan',
    "Unknown field 'plan'. Allowed: name, limits, budgets, allowed_models, allowed_mcp_tools, log_bodies.",
    'unknown_parameter',
  ],
  [
    'a limit of 0',
    { name: 'a', limits: { requests_per_minute: 0 } },
    'limits.requests_per_minute',
    `'limits.requests_per_minute' must be a positive integer or "unlimited".`,
    'invalid_value',
  ],
  [
    'a negative budget',
    { name: 'a', budgets: { daily_usd: -1 } },
    'budgets.daily_usd',
    `'budgets.daily_usd' must be a positive amount of USD (at least 0.000001) or "unlimited".`,
    'invalid_value',
  ],
  [
    'a model pattern with a space',
    { name: 'a', allowed_models: ['gpt 4'] },
    'allowed_models',
    `'allowed_models' must be a list of at most ${MAX_ALLOW_LIST_ENTRIES} model ids or "prefix*" patterns (each 1 to ${MAX_ALLOW_LIST_ENTRY_LENGTH} characters, no whitespace, "*" only as the last character), or null for every model.`,
    'invalid_value',
  ],
];

describe('POST /admin/v1/teams', () => {
  it.each(REFUSED)('refuses %s, and auth is never asked', async (_what, body, param, message, code) => {
    const response = await admin('POST', '/admin/v1/teams', body);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: { message, type: 'invalid_request_error', param, code } });
    expect(received).toEqual([]);
  });

  it('sends auth the name, limits, budgets in micro-dollars and the allow-list, and answers the team', async () => {
    const response = await admin('POST', '/admin/v1/teams', {
      name: 'research',
      limits: { requests_per_minute: 30, tokens_per_minute: 'unlimited' },
      budgets: { daily_usd: 2.5 },
      allowed_models: ['sim-mini', 'gpt-4o*'],
    });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toEqual(TEAM_JSON);
    expect(received).toEqual([
      {
        method: 'CreateTeam',
        request: {
          name: 'research',
          requests_per_minute: { per_minute: 30 },
          tokens_per_minute: { unlimited: true },
          daily_budget: { micro_usd: 2_500_000 },
          monthly_budget: undefined,
          model_allow_list: { models: ['sim-mini', 'gpt-4o*'] },
        },
      },
    ]);
  });
});

describe('the other team routes', () => {
  it('change a team: null removes a limit, a budget or the allow-list', async () => {
    const response = await admin('PATCH', `/admin/v1/teams/${TEAM_ID}`, {
      limits: { requests_per_minute: null },
      budgets: { monthly_usd: 10 },
      allowed_models: null,
    });
    expect(response.json()).toEqual(TEAM_JSON);
    expect(received).toEqual([
      {
        method: 'UpdateTeam',
        request: {
          team_id: TEAM_ID,
          requests_per_minute: { unlimited: true },
          tokens_per_minute: undefined,
          daily_budget: undefined,
          monthly_budget: { micro_usd: 10_000_000 },
          clear_model_allow_list: true,
        },
      },
    ]);
    const nothing = await admin('PATCH', `/admin/v1/teams/${TEAM_ID}`, {});
    expect(nothing.json().error.message).toBe('Nothing to change: send name, limits, budgets, allowed_models, allowed_mcp_tools or log_bodies.');
  });

  it('list teams, answer an unknown one with 404 and a team with live keys with 409', async () => {
    expect((await admin('GET', '/admin/v1/teams')).json()).toEqual({ object: 'list', data: [TEAM_JSON] });
    const unknown = await admin('GET', `/admin/v1/teams/${TEAM_ID}`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: { message: 'No team has this id.', type: 'invalid_request_error', param: 'team_id', code: 'team_not_found' } });
    const busy = await admin('DELETE', `/admin/v1/teams/${TEAM_ID}`);
    expect(busy.statusCode).toBe(409);
    expect(busy.json().error.code).toBe('team_has_keys');
  });

  it("create a key in a team, list a team's keys, and show each key's team", async () => {
    const created = await admin('POST', '/admin/v1/keys', { plan: 'pro', team_id: TEAM_ID });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ id: MEMBER.key_id, team_id: TEAM_ID });
    expect(received[0]).toMatchObject({ method: 'CreateKey', request: { plan: 'PLAN_PRO', team_id: TEAM_ID } });
    const listed = await admin('GET', `/admin/v1/keys?team_id=${TEAM_ID}`);
    expect(listed.json().data[0].team_id).toBe(TEAM_ID);
    expect(received[1]).toEqual({ method: 'ListKeys', request: { team_id: TEAM_ID } });
    const malformed = await admin('POST', '/admin/v1/keys', { plan: 'pro', team_id: 'research' });
    expect(malformed.json().error).toMatchObject({ param: 'team_id', message: "'team_id' must be a team id (team_ and 16 letters or digits)." });
    const moved = await admin('PATCH', `/admin/v1/keys/${MEMBER.key_id}`, { team_id: TEAM_ID });
    expect(moved.json().error).toMatchObject({ param: 'team_id', code: 'unknown_parameter' });
  });
});
