/**
 * The public facts of a stored key as its gateway.auth.v1 message, KeyInfo: what the key RPCs
 * answer and what the audit trail records as a change's before and after. From @gateway/proto only
 * its messages and plan names, no gRPC runtime, so that the CLI, which records the same facts,
 * starts without it.
 */
import { type KeyInfo, planToProto } from '@gateway/proto';
import { BUDGET_FIELDS, toBudget, toMinuteLimit, type PlanTable } from '../shared/limits.js';
import type { StoredKey } from './stored-key.js';

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
