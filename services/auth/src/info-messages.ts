/**
 * The public facts of keys, teams and admin tokens as their gateway.auth.v1 messages (KeyInfo,
 * Team, AdminTokenInfo): what the services answer and what the audit trail records as a change's
 * before and after. Types only from @gateway/proto, no gRPC runtime, so that the CLI, which records
 * the same facts, starts without loading it.
 */
import type { AdminRole, AdminTokenInfo, Budget, KeyInfo, MinuteLimit, Team } from '@gateway/proto';
import type { AdminRoleName, StoredAdminToken } from './admin-access/admin-token-store.js';
import type { StoredKey } from './keys/key-store.js';
import { BUDGET_FIELDS, planToProto, type BudgetLimit, type Limit, type PlanTable } from './quota/plans.js';
import type { StoredTeam } from './teams/team-store.js';

/** A per-minute limit as a MinuteLimit message. */
export function toMinuteLimit(limit: Limit): MinuteLimit {
  return limit === 'unlimited' ? { unlimited: true } : { per_minute: limit };
}

/** A budget as a Budget message. */
export function toBudget(budget: BudgetLimit): Budget {
  return budget === 'unlimited' ? { unlimited: true } : { micro_usd: budget };
}

/** The public facts of a stored key as a KeyInfo message, with the limits in force. */
export function toKeyInfo(key: StoredKey, plans: PlanTable): KeyInfo {
  const info: KeyInfo = {
    key_id: key.key_id,
    plan: planToProto(key.plan),
    name: key.name,
    created_at_ms: key.created_at_ms,
    last_used_at_ms: key.last_used_at_ms,
    revoked: key.revoked,
    routing_policy: key.routing_policy,
    requests_per_minute: toMinuteLimit(key.requests_per_minute_override ?? plans[key.plan].requests_per_minute),
    tokens_per_minute: toMinuteLimit(key.tokens_per_minute_override ?? plans[key.plan].tokens_per_minute),
  };
  if (key.requests_per_minute_override !== undefined) info.requests_per_minute_override = toMinuteLimit(key.requests_per_minute_override);
  if (key.tokens_per_minute_override !== undefined) info.tokens_per_minute_override = toMinuteLimit(key.tokens_per_minute_override);
  if (key.catalog_fallbacks_override !== undefined) info.catalog_fallbacks_override = key.catalog_fallbacks_override;
  info.catalog_fallbacks = key.catalog_fallbacks_override ?? plans[key.plan].catalog_fallbacks;
  for (const field of BUDGET_FIELDS) {
    const override = key[`${field}_override`];
    if (override !== undefined) info[`${field}_override`] = toBudget(override);
    info[field] = toBudget(override ?? plans[key.plan][field]);
  }
  if (key.allowed_models !== undefined) info.allowed_models = { models: key.allowed_models };
  if (key.allowed_mcp_tools !== undefined) info.allowed_mcp_tools = { tools: key.allowed_mcp_tools };
  info.team_id = key.team_id ?? '';
  info.log_bodies = key.log_bodies === true;
  return info;
}

/** Each admin role as its AdminRole value. */
export const ADMIN_ROLES: Record<AdminRoleName, AdminRole> = { admin: 'ADMIN_ROLE_ADMIN', viewer: 'ADMIN_ROLE_VIEWER' };

/** A stored token as the AdminTokenInfo message. */
export function toAdminTokenInfo(token: StoredAdminToken): AdminTokenInfo {
  return {
    token_id: token.token_id,
    name: token.name,
    role: ADMIN_ROLES[token.role],
    created_at_ms: token.created_at_ms,
    revoked: token.revoked,
    created_by: token.created_by,
  };
}

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
