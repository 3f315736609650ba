/**
 * A stored team as its gateway.auth.v1 message, Team (what the TeamService answers, the audit trail
 * and the CLI record). Types only from @gateway/proto, no gRPC runtime.
 */
import type { Team } from '@gateway/proto';
import { toBudget, toMinuteLimit } from '../shared/limits.js';
import type { StoredTeam } from './team-store.js';

/** A stored team as the Team message: an absent limit is `unlimited`. */
export function toTeam(team: StoredTeam): Team {
  const message: Team = {
    team_id: team.team_id,
    name: team.name,
    created_at_ms: team.created_at_ms,
    requests_per_minute: toMinuteLimit(team.requests_per_minute ?? 'unlimited'),
    tokens_per_minute: toMinuteLimit(team.tokens_per_minute ?? 'unlimited'),
    daily_budget: toBudget(team.daily_budget ?? 'unlimited'),
    monthly_budget: toBudget(team.monthly_budget ?? 'unlimited'),
    key_count: team.live_keys,
  };
  if (team.allowed_models) message.model_allow_list = { models: team.allowed_models };
  if (team.allowed_mcp_tools) message.mcp_tool_allow_list = { tools: team.allowed_mcp_tools };
  message.log_bodies = team.log_bodies === true;
  return message;
}
