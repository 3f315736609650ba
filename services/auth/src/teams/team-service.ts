/**
 * The TeamService: teams, their limits, budgets and model allow-list (team-store.ts). A key joins
 * a team when it is created (AuthService's CreateKey); the decision (CheckKey) applies the team's
 * limits. A Redis failure is UNAVAILABLE (auth_unavailable).
 */
import { GatewayError, storeCalls, unary } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type {
  BudgetOutput,
  CreateTeamRequestOutput,
  DeleteTeamRequestOutput,
  DeleteTeamResponse,
  GetTeamRequestOutput,
  ListTeamsResponse,
  MinuteLimitOutput,
  ModelAllowListOutput,
  Team,
  TeamServiceHandlers,
  UpdateTeamRequestOutput,
} from '@gateway/proto';
import type { Auditor } from '../audit/auditor.js';
import { fromBudget, fromMinuteLimit, invalidInput } from '../shared/handler-input.js';
import { toTeam } from './team-message.js';
import type { TeamChanges, TeamLimits, TeamStore } from './team-store.js';

/** What the team service needs. */
export interface TeamServiceDependencies {
  teams: TeamStore;
  logger: Logger;
  /** Records each change (create, update, delete) in the audit trail. */
  auditor: Auditor;
}

/** A team's limit as received: a number, null for none (unlimited, or plan_default in an update), undefined when absent. */
function teamLimit(value: number | 'unlimited' | null | undefined): number | null | undefined {
  return value === 'unlimited' ? null : value;
}

/** The limits a create or update message sets: null removes one. */
function limitsOf(request: {
  requests_per_minute?: MinuteLimitOutput | null;
  tokens_per_minute?: MinuteLimitOutput | null;
  daily_budget?: BudgetOutput | null;
  monthly_budget?: BudgetOutput | null;
}): { [field in Exclude<keyof TeamLimits, 'allowed_models' | 'allowed_mcp_tools' | 'log_bodies'>]: number | null | undefined } {
  return {
    requests_per_minute: teamLimit(fromMinuteLimit(request.requests_per_minute, 'requests_per_minute')),
    tokens_per_minute: teamLimit(fromMinuteLimit(request.tokens_per_minute, 'tokens_per_minute')),
    daily_budget: teamLimit(fromBudget(request.daily_budget, 'daily_budget')),
    monthly_budget: teamLimit(fromBudget(request.monthly_budget, 'monthly_budget')),
  };
}

function allowList(list: ModelAllowListOutput | null | undefined): string[] | undefined {
  return list ? [...(list.models ?? [])] : undefined;
}

/** Creates the TeamService's handlers. */
export function createTeamService(dependencies: TeamServiceDependencies): TeamServiceHandlers {
  const { teams, logger, auditor } = dependencies;
  const report = (error: unknown, method: string) => logger.error({ err: error, method }, 'team handler failed');

  const store = storeCalls(logger, { name: 'team store', reason: 'auth_unavailable', message: 'The team store is unavailable.', refusal: invalidInput });

  function notFound(): GatewayError {
    return GatewayError.of('team_not_found', 'No team has this id.', { param: 'team_id' });
  }

  async function createTeam(request: CreateTeamRequestOutput): Promise<Team> {
    const limits = limitsOf(request);
    for (const [field, message] of Object.entries({ ...request })) {
      if ((message as { value?: string } | null)?.value === 'plan_default')
        throw GatewayError.of('invalid_request', `A team has no plan: ${field} must be a positive number or unlimited.`, { param: field });
    }
    const defined = Object.fromEntries(Object.entries(limits).filter(([, value]) => typeof value === 'number'));
    const models = allowList(request.model_allow_list);
    const tools = request.mcp_tool_allow_list ? [...(request.mcp_tool_allow_list.tools ?? [])] : undefined;
    const created = await store(() =>
      teams.create({
        name: request.name ?? '',
        ...defined,
        ...(models && { allowed_models: models }),
        ...(tools && { allowed_mcp_tools: tools }),
        ...(request.log_bodies && { log_bodies: true }),
      }),
    );
    logger.info({ team_id: created.team_id }, 'team created');
    return toTeam(created);
  }

  async function getTeam(request: GetTeamRequestOutput): Promise<Team> {
    const team = await store(() => teams.get(request.team_id ?? ''));
    if (!team) throw notFound();
    return toTeam(team);
  }

  async function listTeams(): Promise<ListTeamsResponse> {
    return { teams: (await store(() => teams.list())).map(toTeam) };
  }

  async function updateTeam(request: UpdateTeamRequestOutput): Promise<Team> {
    if (request.clear_model_allow_list && request.model_allow_list)
      throw GatewayError.of('invalid_request', 'Send either model_allow_list or clear_model_allow_list, not both.', { param: 'model_allow_list' });
    const changes: TeamChanges = Object.fromEntries(Object.entries(limitsOf(request)).filter(([, value]) => value !== undefined));
    if (request._name === 'name') changes.name = request.name ?? '';
    const models = allowList(request.model_allow_list);
    if (models) changes.allowed_models = models;
    else if (request.clear_model_allow_list) changes.allowed_models = null;
    if (request.clear_mcp_tool_allow_list && request.mcp_tool_allow_list)
      throw GatewayError.of('invalid_request', 'Send either mcp_tool_allow_list or clear_mcp_tool_allow_list, not both.', { param: 'mcp_tool_allow_list' });
    if (request.mcp_tool_allow_list) changes.allowed_mcp_tools = [...(request.mcp_tool_allow_list.tools ?? [])];
    else if (request.clear_mcp_tool_allow_list) changes.allowed_mcp_tools = null;
    if (request._log_bodies === 'log_bodies') changes.log_bodies = request.log_bodies === true;
    const updated = await store(() => teams.update(request.team_id ?? '', changes));
    if (!updated) throw notFound();
    logger.info({ team_id: updated.team_id, changed: Object.keys(changes) }, 'team updated');
    return toTeam(updated);
  }

  async function deleteTeam(request: DeleteTeamRequestOutput): Promise<DeleteTeamResponse> {
    const teamId = request.team_id ?? '';
    const outcome = await store(() => teams.delete(teamId));
    if (!outcome) throw notFound();
    if (outcome === 'has_keys')
      throw GatewayError.of('team_has_keys', 'This team still has live keys: revoke them before deleting the team.', { param: 'team_id' });
    logger.info({ team_id: teamId }, 'team deleted');
    return { team_id: teamId };
  }

  /** A team's public facts before a change, for the audit trail; null when there is none. */
  const teamBefore = async (request: { team_id?: string | null }) => {
    const team = await teams.get(request.team_id ?? '').catch(() => undefined);
    return team ? toTeam(team) : null;
  };
  const target = (request: { team_id?: string | null }) => request.team_id ?? '';

  return {
    CreateTeam: unary(
      auditor.audited(createTeam, { action: 'team.create', target: (_, team) => team.team_id ?? '', after: (team) => team }),
      'CreateTeam',
      report,
    ),
    GetTeam: unary(getTeam, 'GetTeam', report),
    ListTeams: unary(listTeams, 'ListTeams', report),
    UpdateTeam: unary(auditor.audited(updateTeam, { action: 'team.update', target, before: teamBefore, after: (team) => team }), 'UpdateTeam', report),
    DeleteTeam: unary(auditor.audited(deleteTeam, { action: 'team.delete', target, before: teamBefore, after: () => null }), 'DeleteTeam', report),
  };
}
