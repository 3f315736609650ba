/**
 * The admin API's teams: /admin/v1/teams to create, list, read, change and delete teams of keys,
 * in the admin scope (admin-scope.ts), each an RPC of auth's TeamService. A team's limits and
 * budgets apply over all its keys, besides each key's own; a key joins a team when it is created
 * (POST /admin/v1/keys with team_id) and never moves. A team is deleted only once none of its keys
 * is live (409 team_has_keys otherwise: revoke them first).
 */
import type { FastifyInstance } from 'fastify';
import { callUnary } from '@gateway/grpc';
import type {
  Budget,
  BudgetOutput,
  CreateTeamRequest,
  DeleteTeamRequest,
  DeleteTeamResponseOutput,
  GetTeamRequest,
  ListTeamsRequest,
  ListTeamsResponseOutput,
  MinuteLimit,
  MinuteLimitOutput,
  TeamOutput,
  UpdateTeamRequest,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { type Team, type TeamChange, TeamChangeSchema, type TeamCreation, TeamCreationSchema } from './admin-api-schemas.js';
import { registerAdminResource } from './admin-resource.js';
import { absentBodyIsEmpty, registerAdminScope } from './admin-scope.js';

function perMinute(limit: MinuteLimitOutput | null | undefined): number | null {
  return limit?.value === 'per_minute' ? Number(limit.per_minute ?? 0) : null;
}

function usd(budget: BudgetOutput | null | undefined): number | null {
  return budget?.value === 'micro_usd' ? Number(budget.micro_usd ?? 0) / 1_000_000 : null;
}

/** A Team message as the admin API's JSON. */
export function adminTeamJson(team: TeamOutput): Team {
  return {
    object: 'team',
    id: team.team_id ?? '',
    name: team.name ?? '',
    created_at: Math.floor((team.created_at_ms ?? 0) / 1000),
    limits: { requests_per_minute: perMinute(team.requests_per_minute), tokens_per_minute: perMinute(team.tokens_per_minute) },
    budgets: { daily_usd: usd(team.daily_budget), monthly_usd: usd(team.monthly_budget) },
    allowed_models: team.model_allow_list ? [...(team.model_allow_list.models ?? [])] : null,
    allowed_mcp_tools: team.mcp_tool_allow_list ? [...(team.mcp_tool_allow_list.tools ?? [])] : null,
    key_count: Number(team.key_count ?? 0),
    log_bodies: team.log_bodies === true,
  };
}

/** A limit as auth takes it: undefined when left out, unlimited for "unlimited" or null (none). */
function minuteLimit(limit: number | 'unlimited' | null | undefined): MinuteLimit | undefined {
  if (limit === undefined) return undefined;
  return typeof limit === 'number' ? { per_minute: limit } : { unlimited: true };
}

/** A budget in micro-USD as auth takes it: undefined when left out, unlimited for "unlimited" or null. */
function budget(amount: number | 'unlimited' | null | undefined): Budget | undefined {
  if (amount === undefined) return undefined;
  return typeof amount === 'number' ? { micro_usd: Math.round(amount * 1_000_000) } : { unlimited: true };
}

/** The limits and budgets of a body, as auth takes them; a field left out is left out. */
function teamSettings(body: TeamCreation | TeamChange) {
  return {
    requests_per_minute: minuteLimit(body.limits?.requests_per_minute),
    tokens_per_minute: minuteLimit(body.limits?.tokens_per_minute),
    daily_budget: budget(body.budgets?.daily_usd),
    monthly_budget: budget(body.budgets?.monthly_usd),
  };
}

/** Registers /admin/v1/teams when an admin token is configured. */
export function registerAdminTeams(app: FastifyInstance, deps: EdgeDependencies): void {
  const { teams } = deps;
  registerAdminScope(app, deps, (admin, options) => {
    admin.post<{ Body: TeamCreation }>(
      '/admin/v1/teams',
      { schema: { body: TeamCreationSchema }, preValidation: absentBodyIsEmpty },
      async (request, reply) => {
        const body = request.body;
        const create: CreateTeamRequest = {
          name: body.name,
          ...teamSettings(body),
          ...(body.allowed_models ? { model_allow_list: { models: body.allowed_models } } : {}),
          ...(body.allowed_mcp_tools ? { mcp_tool_allow_list: { tools: body.allowed_mcp_tools } } : {}),
          ...(body.log_bodies !== undefined ? { log_bodies: body.log_bodies } : {}),
        };
        const team = await callUnary<CreateTeamRequest, TeamOutput>(teams, teams.CreateTeam, create, options(request));
        void reply.status(201);
        return adminTeamJson(team);
      },
    );

    registerAdminResource(admin, options, {
      path: '/admin/v1/teams',
      param: 'id',
      json: adminTeamJson,
      list: async (_request, call) => (await callUnary<ListTeamsRequest, ListTeamsResponseOutput>(teams, teams.ListTeams, {}, call)).teams,
      get: (id, call) => callUnary<GetTeamRequest, TeamOutput>(teams, teams.GetTeam, { team_id: id }, call),
      remove: async (id, call) => {
        const deleted = await callUnary<DeleteTeamRequest, DeleteTeamResponseOutput>(teams, teams.DeleteTeam, { team_id: id }, call);
        return { object: 'team.deleted', id: deleted.team_id ?? id, deleted: true };
      },
    });

    admin.patch<{ Params: { id: string }; Body: TeamChange }>(
      '/admin/v1/teams/:id',
      { schema: { body: TeamChangeSchema }, preValidation: absentBodyIsEmpty },
      async (request) => {
        const body = request.body;
        const models = body.allowed_models;
        const tools = body.allowed_mcp_tools;
        const update: UpdateTeamRequest = {
          team_id: request.params.id,
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...teamSettings(body),
          ...(models ? { model_allow_list: { models } } : models === null ? { clear_model_allow_list: true } : {}),
          ...(tools ? { mcp_tool_allow_list: { tools } } : tools === null ? { clear_mcp_tool_allow_list: true } : {}),
          ...(body.log_bodies !== undefined ? { log_bodies: body.log_bodies } : {}),
        };
        const team = await callUnary<UpdateTeamRequest, TeamOutput>(teams, teams.UpdateTeam, update, options(request));
        return adminTeamJson(team);
      },
    );
  });
}
