/**
 * The key RPCs of the AuthService: CreateKey, ListKeys, GetKey, UpdateKey and RevokeKey, through
 * the key store; each change is recorded in the audit trail (auditor.ts).
 */
import { GatewayError, unary } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import {
  type AuthServiceHandlers,
  type CreateKeyRequestOutput,
  type CreateKeyResponse,
  type GetKeyRequestOutput,
  type KeyInfo,
  type ListKeysRequestOutput,
  type ListKeysResponse,
  planFromProto,
  type RevokeKeyRequestOutput,
  type UpdateKeyRequestOutput,
} from '@gateway/proto';
import type { Auditor } from '../audit/auditor.js';
import { type FailureReport, fromBudget, fromMinuteLimit, type StoreCall } from '../shared/handler-input.js';
import type { PlansSource } from '../shared/limits.js';
import { isWellFormedSecret } from './key-secret.js';
import { toKeyInfo } from './key-message.js';
import { KeyExistsError, TeamNotFoundError } from '../shared/input-error.js';
import type { KeyStore } from './key-store.js';
import type { KeyChanges } from './stored-key.js';

/** What the key RPCs need. */
export interface KeyHandlerDependencies {
  keys: KeyStore;
  plans: PlansSource;
  logger: Logger;
  /** Records each key change (create, update, revoke) in the audit trail. */
  auditor: Auditor;
  store: StoreCall;
  report: FailureReport;
}

/** Creates the key RPCs' handlers; see the module comment. */
export function createKeyHandlers(
  dependencies: KeyHandlerDependencies,
): Pick<AuthServiceHandlers, 'CreateKey' | 'ListKeys' | 'GetKey' | 'UpdateKey' | 'RevokeKey'> {
  const { keys, plans, logger, auditor, store, report } = dependencies;

  async function createKey(request: CreateKeyRequestOutput): Promise<CreateKeyResponse> {
    const plan = planFromProto(request.plan);
    if (!plan)
      throw GatewayError.of('invalid_request', 'A plan is required: PLAN_STARTER, PLAN_PRO or PLAN_ENTERPRISE.', {
        param: 'plan',
      });
    const secret = request.secret || undefined;
    if (secret !== undefined && !isWellFormedSecret(secret)) {
      throw GatewayError.of('invalid_request', 'A secret must be "br-" followed by at least 32 letters or digits.', {
        param: 'secret',
      });
    }
    const requests = fromMinuteLimit(request.requests_per_minute_override, 'requests_per_minute_override') ?? undefined;
    const tokens = fromMinuteLimit(request.tokens_per_minute_override, 'tokens_per_minute_override') ?? undefined;
    const fallbacks = request._catalog_fallbacks_override === 'catalog_fallbacks_override' ? request.catalog_fallbacks_override === true : undefined;
    const daily = fromBudget(request.daily_budget_override, 'daily_budget_override') ?? undefined;
    const monthly = fromBudget(request.monthly_budget_override, 'monthly_budget_override') ?? undefined;
    const teamId = request.team_id ?? '';
    try {
      const created = await store(
        () =>
          keys.create({
            plan,
            name: request.name ?? '',
            secret,
            requests_per_minute_override: requests,
            tokens_per_minute_override: tokens,
            routing_policy: request.routing_policy ?? '',
            catalog_fallbacks_override: fallbacks,
            daily_budget_override: daily,
            monthly_budget_override: monthly,
            allowed_models: request.allowed_models ? request.allowed_models.models : undefined,
            allowed_mcp_tools: request.allowed_mcp_tools ? request.allowed_mcp_tools.tools : undefined,
            team_id: teamId,
            log_bodies: request.log_bodies === true,
          }),
        'The key store is unavailable.',
      );
      logger.info({ key_id: created.key.key_id, plan, team_id: teamId || undefined }, 'key created');
      return { key: toKeyInfo(created.key, plans.current), secret: created.secret };
    } catch (error) {
      if (error instanceof KeyExistsError) throw GatewayError.of('key_exists', 'A key with this secret already exists.', { param: 'secret' });
      if (error instanceof TeamNotFoundError) throw GatewayError.of('team_not_found', 'No team has this id.', { param: 'team_id' });
      throw error;
    }
  }

  async function listKeys(request: ListKeysRequestOutput): Promise<ListKeysResponse> {
    const teamId = request.team_id || undefined;
    const all = await store(() => keys.list(teamId), 'The key store is unavailable.');
    return { keys: all.map((key) => toKeyInfo(key, plans.current)) };
  }

  function notFound(): GatewayError {
    return GatewayError.of('key_not_found', 'No key has this id.', { param: 'key_id' });
  }

  async function getKey(request: GetKeyRequestOutput): Promise<KeyInfo> {
    const keyId = request.key_id ?? '';
    const key = keyId ? await store(() => keys.get(keyId), 'The key store is unavailable.') : undefined;
    if (!key) throw notFound();
    return toKeyInfo(key, plans.current);
  }

  async function updateKey(request: UpdateKeyRequestOutput): Promise<KeyInfo> {
    const changes: KeyChanges = {};
    if (request.plan !== undefined && request.plan !== 'PLAN_UNSPECIFIED') {
      const plan = planFromProto(request.plan);
      if (!plan) throw GatewayError.of('invalid_request', 'plan must be PLAN_STARTER, PLAN_PRO or PLAN_ENTERPRISE.', { param: 'plan' });
      changes.plan = plan;
    }
    if (request._name === 'name') changes.name = request.name ?? '';
    if (request._routing_policy === 'routing_policy') changes.routing_policy = request.routing_policy ?? '';
    if (request._log_bodies === 'log_bodies') changes.log_bodies = request.log_bodies === true;
    const requests = fromMinuteLimit(request.requests_per_minute_override, 'requests_per_minute_override');
    const tokens = fromMinuteLimit(request.tokens_per_minute_override, 'tokens_per_minute_override');
    if (requests !== undefined) changes.requests_per_minute_override = requests;
    if (tokens !== undefined) changes.tokens_per_minute_override = tokens;
    const daily = fromBudget(request.daily_budget_override, 'daily_budget_override');
    const monthly = fromBudget(request.monthly_budget_override, 'monthly_budget_override');
    if (daily !== undefined) changes.daily_budget_override = daily;
    if (monthly !== undefined) changes.monthly_budget_override = monthly;
    const fallbacksSet = request._catalog_fallbacks_override === 'catalog_fallbacks_override';
    if (fallbacksSet && request.catalog_fallbacks_plan_default) {
      throw GatewayError.of('invalid_request', 'Send either catalog_fallbacks_override or catalog_fallbacks_plan_default, not both.', {
        param: 'catalog_fallbacks_override',
      });
    }
    if (fallbacksSet) changes.catalog_fallbacks_override = request.catalog_fallbacks_override === true;
    else if (request.catalog_fallbacks_plan_default) changes.catalog_fallbacks_override = null;
    if (request.allowed_models && request.clear_allowed_models) {
      throw GatewayError.of('invalid_request', 'Send either allowed_models or clear_allowed_models, not both.', { param: 'allowed_models' });
    }
    if (request.allowed_models) changes.allowed_models = request.allowed_models.models;
    else if (request.clear_allowed_models) changes.allowed_models = null;
    if (request.allowed_mcp_tools && request.clear_allowed_mcp_tools) {
      throw GatewayError.of('invalid_request', 'Send either allowed_mcp_tools or clear_allowed_mcp_tools, not both.', { param: 'allowed_mcp_tools' });
    }
    if (request.allowed_mcp_tools) changes.allowed_mcp_tools = request.allowed_mcp_tools.tools;
    else if (request.clear_allowed_mcp_tools) changes.allowed_mcp_tools = null;
    const keyId = request.key_id ?? '';
    const updated = keyId ? await store(() => keys.update(keyId, changes), 'The key store is unavailable.') : undefined;
    if (!updated) throw notFound();
    logger.info({ key_id: updated.key_id, changed: Object.keys(changes) }, 'key updated');
    return toKeyInfo(updated, plans.current);
  }

  async function revokeKey(request: RevokeKeyRequestOutput): Promise<KeyInfo> {
    const keyId = request.key_id ?? '';
    const revoked = keyId ? await store(() => keys.revoke(keyId), 'The key store is unavailable.') : undefined;
    if (!revoked) throw notFound();
    logger.info({ key_id: revoked.key_id }, 'key revoked');
    return toKeyInfo(revoked, plans.current);
  }

  /** A key's public facts before a change, for the audit trail; undefined for an unknown id. */
  async function keyBefore(request: { key_id?: string }): Promise<KeyInfo | undefined> {
    const keyId = request.key_id ?? '';
    const key = keyId ? await store(() => keys.get(keyId), 'The key store is unavailable.') : undefined;
    return key && toKeyInfo(key, plans.current);
  }

  return {
    CreateKey: unary(
      auditor.audited(createKey, { action: 'key.create', target: (_, created) => created.key?.key_id ?? '', after: (created) => created.key }),
      'CreateKey',
      report,
    ),
    ListKeys: unary(listKeys, 'ListKeys', report),
    RevokeKey: unary(
      auditor.audited(revokeKey, { action: 'key.revoke', target: (request) => request.key_id ?? '', before: keyBefore, after: (key) => key }),
      'RevokeKey',
      report,
    ),
    GetKey: unary(getKey, 'GetKey', report),
    UpdateKey: unary(
      auditor.audited(updateKey, { action: 'key.update', target: (request) => request.key_id ?? '', before: keyBefore, after: (key) => key }),
      'UpdateKey',
      report,
    ),
  };
}
