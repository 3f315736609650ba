/**
 * The admin API: /admin/v1/keys to create (in a team, with team_id), list (a team's, with
 * ?team_id=), read, change and revoke API keys, in the admin
 * scope (admin-scope.ts: only with EDGE_ADMIN_TOKEN set, only with that token). Every operation is
 * an auth RPC, so the admin API and auth's CLI share one code path (auth's KeyStore). Request
 * bodies are checked by their schemas (admin-api-schemas.ts), each node carrying the message it
 * answers.
 */
import type { FastifyInstance } from 'fastify';
import { callUnary } from '@gateway/grpc';
import { planFromProto, planToProto } from '@gateway/proto';
import type {
  Budget,
  BudgetOutput,
  CreateKeyRequest,
  CreateKeyResponseOutput,
  GetKeyRequest,
  KeyInfoOutput,
  ListKeysRequest,
  ListKeysResponseOutput,
  MinuteLimit,
  MinuteLimitOutput,
  RevokeKeyRequest,
  UpdateKeyRequest,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import {
  type Budget as BudgetJson,
  type CreatedKey,
  type Key,
  type KeyChange,
  KeyChangeSchema,
  type KeyCreation,
  KeyCreationSchema,
  type KeyListQuery,
  KeyListQuerySchema,
  type Limit as LimitJson,
} from './admin-api-schemas.js';
import { registerAdminResource } from './admin-resource.js';
import { absentBodyIsEmpty, registerAdminScope } from './admin-scope.js';

/** A plan's name in the admin API; `unknown` for one this edge does not know (a newer auth's). */
export function planName(plan: string | null | undefined): Key['plan'] {
  return planFromProto(plan) ?? 'unknown';
}

function limitJson(limit: MinuteLimitOutput | null | undefined): LimitJson | null {
  if (!limit) return null;
  if (limit.unlimited) return 'unlimited';
  return limit.per_minute ?? null;
}

/** A Budget message in USD; null for none (unlimited or absent). */
function budgetUsd(budget: BudgetOutput | null | undefined): number | null {
  if (budget?.value !== 'micro_usd') return null;
  return Number(budget.micro_usd ?? 0) / 1_000_000;
}

/** A KeyInfo as the admin API's JSON. */
export function adminKeyJson(key: KeyInfoOutput): Key {
  const overrides: Key['overrides'] = {};
  const requests = limitJson(key.requests_per_minute_override);
  const tokens = limitJson(key.tokens_per_minute_override);
  if (requests !== null) overrides.requests_per_minute = requests;
  if (tokens !== null) overrides.tokens_per_minute = tokens;
  if (key._catalog_fallbacks_override === 'catalog_fallbacks_override') overrides.catalog_fallbacks = key.catalog_fallbacks_override === true;
  for (const field of ['daily_budget', 'monthly_budget'] as const) {
    const override = key[`${field}_override`];
    if (override) overrides[`${field}_usd`] = override.value === 'unlimited' ? 'unlimited' : (budgetUsd(override) ?? 'unlimited');
  }
  return {
    object: 'api_key',
    id: key.key_id ?? '',
    name: key.name ?? '',
    plan: planName(key.plan),
    created_at: Math.floor((key.created_at_ms ?? 0) / 1000),
    last_used_at: key.last_used_at_ms ? Math.floor(key.last_used_at_ms / 1000) : null,
    revoked: key.revoked ?? false,
    limits: { requests_per_minute: limitJson(key.requests_per_minute), tokens_per_minute: limitJson(key.tokens_per_minute) },
    budgets: { daily_usd: budgetUsd(key.daily_budget), monthly_usd: budgetUsd(key.monthly_budget) },
    overrides,
    routing_policy: key.routing_policy || null,
    catalog_fallbacks: key.catalog_fallbacks ?? false,
    allowed_models: key.allowed_models ? (key.allowed_models.models ?? []) : null,
    allowed_mcp_tools: key.allowed_mcp_tools ? (key.allowed_mcp_tools.tools ?? []) : null,
    team_id: key.team_id || null,
    log_bodies: key.log_bodies === true,
  };
}

/** A limit as auth takes it; undefined when the body does not set it. */
function minuteLimit(limit: LimitJson | null | undefined): MinuteLimit | undefined {
  if (limit === undefined) return undefined;
  if (limit === null) return { plan_default: true };
  return limit === 'unlimited' ? { unlimited: true } : { per_minute: limit };
}

/** A budget as auth takes it, in micro-dollars; undefined when the body does not set it. */
function budget(usd: BudgetJson | null | undefined): Budget | undefined {
  if (usd === undefined) return undefined;
  if (usd === null) return { plan_default: true };
  return usd === 'unlimited' ? { unlimited: true } : { micro_usd: Math.round(usd * 1_000_000) };
}

/** The fields a creation and a change share, as auth takes them; each undefined when the body leaves it out. */
function keySettings(body: KeyCreation | KeyChange) {
  return {
    name: body.name,
    routing_policy: body.routing_policy === undefined ? undefined : (body.routing_policy ?? ''),
    requests_per_minute_override: minuteLimit(body.limits?.requests_per_minute),
    tokens_per_minute_override: minuteLimit(body.limits?.tokens_per_minute),
    daily_budget_override: budget(body.budgets?.daily_usd),
    monthly_budget_override: budget(body.budgets?.monthly_usd),
  };
}

/** Registers /admin/v1/keys when an admin token is configured. */
export function registerAdminKeys(app: FastifyInstance, deps: EdgeDependencies): void {
  registerAdminScope(app, deps, (admin, options) => {
    admin.post<{ Body: KeyCreation }>(
      '/admin/v1/keys',
      { schema: { body: KeyCreationSchema }, preValidation: absentBodyIsEmpty },
      async (request, reply): Promise<CreatedKey> => {
        const body = request.body;
        // A field left undefined is left out of the message: auth keeps the plan's setting.
        const create: CreateKeyRequest = {
          plan: planToProto(body.plan),
          ...keySettings(body),
          catalog_fallbacks_override: body.catalog_fallbacks,
          allowed_models: body.allowed_models ? { models: body.allowed_models } : undefined,
          allowed_mcp_tools: body.allowed_mcp_tools ? { tools: body.allowed_mcp_tools } : undefined,
          log_bodies: body.log_bodies,
          ...(body.team_id ? { team_id: body.team_id } : {}),
        };
        const created = await callUnary<CreateKeyRequest, CreateKeyResponseOutput>(deps.auth, deps.auth.CreateKey, create, options(request));
        void reply.status(201);
        return { ...adminKeyJson(created.key!), secret: created.secret ?? '' };
      },
    );

    registerAdminResource<KeyInfoOutput, Key, KeyListQuery>(admin, options, {
      path: '/admin/v1/keys',
      param: 'id',
      json: adminKeyJson,
      listOptions: { schema: { querystring: KeyListQuerySchema } },
      list: async (request, call) => {
        const filter: ListKeysRequest = request.query.team_id ? { team_id: request.query.team_id } : {};
        return (await callUnary<ListKeysRequest, ListKeysResponseOutput>(deps.auth, deps.auth.ListKeys, filter, call)).keys;
      },
      get: (id, call) => callUnary<GetKeyRequest, KeyInfoOutput>(deps.auth, deps.auth.GetKey, { key_id: id }, call),
      remove: async (id, call) => adminKeyJson(await callUnary<RevokeKeyRequest, KeyInfoOutput>(deps.auth, deps.auth.RevokeKey, { key_id: id }, call)),
    });

    admin.patch<{ Params: { id: string }; Body: KeyChange }>(
      '/admin/v1/keys/:id',
      { schema: { body: KeyChangeSchema }, preValidation: absentBodyIsEmpty },
      async (request) => {
        const body = request.body;
        const update: UpdateKeyRequest = {
          key_id: request.params.id,
          plan: body.plan === undefined ? undefined : planToProto(body.plan),
          ...keySettings(body),
          catalog_fallbacks_plan_default: body.catalog_fallbacks === null ? true : undefined,
          catalog_fallbacks_override: body.catalog_fallbacks ?? undefined,
          allowed_models: body.allowed_models ? { models: body.allowed_models } : undefined,
          clear_allowed_models: body.allowed_models === null ? true : undefined,
          allowed_mcp_tools: body.allowed_mcp_tools ? { tools: body.allowed_mcp_tools } : undefined,
          clear_allowed_mcp_tools: body.allowed_mcp_tools === null ? true : undefined,
          log_bodies: body.log_bodies,
        };
        const key = await callUnary<UpdateKeyRequest, KeyInfoOutput>(deps.auth, deps.auth.UpdateKey, update, options(request));
        return adminKeyJson(key);
      },
    );
  });
}
