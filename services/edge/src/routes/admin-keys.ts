/**
 * The admin API: /admin/v1/keys to create, list, read, change and revoke API keys. It exists only
 * when EDGE_ADMIN_TOKEN is set (otherwise every path is a plain 404), and answers only requests
 * bearing that token: none or a wrong one is a 401, a gateway API key (`br-...`) a 403. Every
 * operation is an auth RPC, so the admin API and auth's CLI share one code path (auth's KeyStore).
 */
import type { FastifyInstance } from 'fastify';
import { callUnary } from '@gateway/grpc';
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
  Plan,
  RevokeKeyRequest,
  UpdateKeyRequest,
} from '@gateway/proto';
import type { EdgeDependencies } from '../app.js';
import { invalid } from '../errors.js';
import { adminTokenHook } from './admin-token.js';

const PLANS: Record<string, Plan> = { starter: 'PLAN_STARTER', pro: 'PLAN_PRO', enterprise: 'PLAN_ENTERPRISE' };
const PLAN_NAMES: Record<string, string> = { PLAN_STARTER: 'starter', PLAN_PRO: 'pro', PLAN_ENTERPRISE: 'enterprise' };
const LIMIT_FIELDS = ['requests_per_minute', 'tokens_per_minute'] as const;
/** The budget fields of a body's `budgets`, and the proto fields they set. */
const BUDGET_FIELDS = { daily_usd: 'daily_budget', monthly_usd: 'monthly_budget' } as const;
type BudgetJsonField = keyof typeof BUDGET_FIELDS;
/** The fields a key's body may carry. */
const KEY_BODY_FIELDS = ['plan', 'name', 'limits', 'budgets', 'routing_policy', 'catalog_fallbacks'] as const;

/** A budget as the admin API shows it: USD, or "unlimited". */
type BudgetJson = number | 'unlimited';

/** A per-minute limit as the admin API shows it. */
type LimitJson = number | 'unlimited';

/** A key as the admin API returns it; never its secret, except once in the creation response. */
export interface AdminKeyJson {
  object: 'api_key';
  id: string;
  name: string;
  plan: string;
  /** Unix seconds. */
  created_at: number;
  /** Unix seconds, precise to a minute; null when never used. */
  last_used_at: number | null;
  revoked: boolean;
  /** The limits in force. */
  limits: Record<(typeof LIMIT_FIELDS)[number], LimitJson | null>;
  /** The budgets in force, in USD per UTC day and month; null: none. */
  budgets: Record<BudgetJsonField, number | null>;
  /** This key's overrides of its plan's limits, budgets and catalog fallbacks default. */
  overrides: Partial<Record<(typeof LIMIT_FIELDS)[number], LimitJson>> & {
    catalog_fallbacks?: boolean;
    daily_budget_usd?: BudgetJson;
    monthly_budget_usd?: BudgetJson;
  };
  routing_policy: string | null;
  /** In force: whether a request that says nothing about fallbacks uses the catalog's chain. */
  catalog_fallbacks: boolean;
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
export function adminKeyJson(key: KeyInfoOutput): AdminKeyJson {
  const overrides: AdminKeyJson['overrides'] = {};
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
    plan: PLAN_NAMES[key.plan ?? ''] ?? 'unknown',
    created_at: Math.floor((key.created_at_ms ?? 0) / 1000),
    last_used_at: key.last_used_at_ms ? Math.floor(key.last_used_at_ms / 1000) : null,
    revoked: key.revoked ?? false,
    limits: { requests_per_minute: limitJson(key.requests_per_minute), tokens_per_minute: limitJson(key.tokens_per_minute) },
    budgets: { daily_usd: budgetUsd(key.daily_budget), monthly_usd: budgetUsd(key.monthly_budget) },
    overrides,
    routing_policy: key.routing_policy || null,
    catalog_fallbacks: key.catalog_fallbacks ?? false,
  };
}

function objectBody(body: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid(null, 'The request body must be a JSON object.', 'invalid_json');
  const record = body as Record<string, unknown>;
  for (const field of Object.keys(record)) {
    if (!allowed.includes(field)) throw invalid(field, `Unknown field '${field}'. Allowed: ${allowed.join(', ')}.`, 'unknown_parameter');
  }
  return record;
}

function planOf(value: unknown): Plan {
  if (typeof value !== 'string' || !(value in PLANS)) throw invalid('plan', `'plan' must be one of ${Object.keys(PLANS).join(', ')}.`);
  return PLANS[value]!;
}

function nameOf(value: unknown): string {
  if (typeof value !== 'string' || value.length > 200) throw invalid('name', "'name' must be a string of at most 200 characters.");
  return value;
}

function policyOf(value: unknown): string {
  if (value === null) return '';
  if (typeof value !== 'string' || !/^[A-Za-z0-9._:-]{1,64}$/.test(value)) {
    throw invalid('routing_policy', "'routing_policy' must be 1 to 64 letters, digits, '.', '_', ':' or '-', or null to remove it.");
  }
  return value;
}

/** A catalog_fallbacks field: true or false, or (in an update) null for the plan's default. */
function catalogFallbacksOf(value: unknown, allowNull: boolean): boolean | null {
  if (typeof value === 'boolean' || (value === null && allowNull)) return value;
  throw invalid('catalog_fallbacks', `'catalog_fallbacks' must be true or false${allowNull ? ", or null for the plan's default" : ''}.`);
}

/** The limit overrides of a body: a positive integer, "unlimited", or (in an update) null for the plan's. */
function overridesOf(value: unknown, allowNull: boolean): Partial<Record<(typeof LIMIT_FIELDS)[number], MinuteLimit>> {
  const limits = objectBody(value, LIMIT_FIELDS);
  const result: Partial<Record<(typeof LIMIT_FIELDS)[number], MinuteLimit>> = {};
  for (const field of LIMIT_FIELDS) {
    if (!(field in limits)) continue;
    const limit = limits[field];
    if (limit === 'unlimited') result[field] = { unlimited: true };
    else if (limit === null && allowNull) result[field] = { plan_default: true };
    else if (typeof limit === 'number' && Number.isSafeInteger(limit) && limit > 0) result[field] = { per_minute: limit };
    else throw invalid(`limits.${field}`, `'limits.${field}' must be a positive integer or "unlimited"${allowNull ? ", or null for the plan's limit" : ''}.`);
  }
  return result;
}

/**
 * The budgets of a body: a positive amount of USD (to the micro-dollar), "unlimited", or (in an
 * update) null for the plan's budget.
 */
function budgetsOf(value: unknown, allowNull: boolean): Partial<Record<'daily_budget' | 'monthly_budget', Budget>> {
  const budgets = objectBody(value, Object.keys(BUDGET_FIELDS));
  const result: Partial<Record<'daily_budget' | 'monthly_budget', Budget>> = {};
  for (const [field, target] of Object.entries(BUDGET_FIELDS) as Array<[BudgetJsonField, 'daily_budget' | 'monthly_budget']>) {
    if (!(field in budgets)) continue;
    const budget = budgets[field];
    const micro = typeof budget === 'number' && Number.isFinite(budget) ? Math.round(budget * 1_000_000) : 0;
    if (budget === 'unlimited') result[target] = { unlimited: true };
    else if (budget === null && allowNull) result[target] = { plan_default: true };
    else if (micro >= 1 && Number.isSafeInteger(micro)) result[target] = { micro_usd: micro };
    else
      throw invalid(
        `budgets.${field}`,
        `'budgets.${field}' must be a positive amount of USD (at least 0.000001) or "unlimited"${allowNull ? ", or null for the plan's budget" : ''}.`,
      );
  }
  return result;
}

/** Registers /admin/v1/keys when an admin token is configured. */
export function registerAdminKeys(app: FastifyInstance, deps: EdgeDependencies): void {
  const token = deps.config.EDGE_ADMIN_TOKEN;
  if (!token) return;
  const options = (requestId: string) => ({ deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId });

  void app.register(async (admin) => {
    admin.addHook('onRequest', adminTokenHook(token));

    admin.post('/admin/v1/keys', async (request, reply) => {
      const body = objectBody(request.body ?? {}, KEY_BODY_FIELDS);
      const create: CreateKeyRequest = { plan: planOf(body.plan) };
      if (body.name !== undefined) create.name = nameOf(body.name);
      if (body.routing_policy !== undefined) create.routing_policy = policyOf(body.routing_policy);
      if (body.catalog_fallbacks !== undefined) create.catalog_fallbacks_override = catalogFallbacksOf(body.catalog_fallbacks, false)!;
      if (body.limits !== undefined) {
        const overrides = overridesOf(body.limits, false);
        create.requests_per_minute_override = overrides.requests_per_minute;
        create.tokens_per_minute_override = overrides.tokens_per_minute;
      }
      if (body.budgets !== undefined) {
        const budgets = budgetsOf(body.budgets, false);
        create.daily_budget_override = budgets.daily_budget;
        create.monthly_budget_override = budgets.monthly_budget;
      }
      const created = await callUnary<CreateKeyRequest, CreateKeyResponseOutput>(deps.auth, deps.auth.CreateKey, create, options(request.id));
      void reply.status(201);
      return { ...adminKeyJson(created.key!), secret: created.secret };
    });

    admin.get('/admin/v1/keys', async (request) => {
      const listed = await callUnary<ListKeysRequest, ListKeysResponseOutput>(deps.auth, deps.auth.ListKeys, {}, options(request.id));
      return { object: 'list', data: listed.keys.map(adminKeyJson) };
    });

    admin.get<{ Params: { id: string } }>('/admin/v1/keys/:id', async (request) => {
      const key = await callUnary<GetKeyRequest, KeyInfoOutput>(deps.auth, deps.auth.GetKey, { key_id: request.params.id }, options(request.id));
      return adminKeyJson(key);
    });

    admin.delete<{ Params: { id: string } }>('/admin/v1/keys/:id', async (request) => {
      const key = await callUnary<RevokeKeyRequest, KeyInfoOutput>(deps.auth, deps.auth.RevokeKey, { key_id: request.params.id }, options(request.id));
      return adminKeyJson(key);
    });

    admin.patch<{ Params: { id: string } }>('/admin/v1/keys/:id', async (request) => {
      const body = objectBody(request.body ?? {}, KEY_BODY_FIELDS);
      if (Object.keys(body).length === 0) throw invalid(null, 'Nothing to change: send plan, name, limits, budgets, routing_policy or catalog_fallbacks.');
      const update: UpdateKeyRequest = { key_id: request.params.id };
      if (body.plan !== undefined) update.plan = planOf(body.plan);
      if (body.name !== undefined) update.name = nameOf(body.name);
      if (body.routing_policy !== undefined) update.routing_policy = policyOf(body.routing_policy);
      if (body.catalog_fallbacks !== undefined) {
        const fallbacks = catalogFallbacksOf(body.catalog_fallbacks, true);
        if (fallbacks === null) update.catalog_fallbacks_plan_default = true;
        else update.catalog_fallbacks_override = fallbacks;
      }
      if (body.limits !== undefined) {
        const overrides = overridesOf(body.limits, true);
        update.requests_per_minute_override = overrides.requests_per_minute;
        update.tokens_per_minute_override = overrides.tokens_per_minute;
      }
      if (body.budgets !== undefined) {
        const budgets = budgetsOf(body.budgets, true);
        update.daily_budget_override = budgets.daily_budget;
        update.monthly_budget_override = budgets.monthly_budget;
      }
      const key = await callUnary<UpdateKeyRequest, KeyInfoOutput>(deps.auth, deps.auth.UpdateKey, update, options(request.id));
      return adminKeyJson(key);
    });
  });
}
