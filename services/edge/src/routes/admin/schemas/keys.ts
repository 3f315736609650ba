/** The admin API's keys (/admin/v1/keys): the bodies of a creation and a change, a key's answer, the list's query. */
import { PLAN_NAMES } from '@gateway/proto';
import { type Static, Type } from '@sinclair/typebox';
import {
  AllowedMcpToolsSchema,
  AllowedModelsSchema,
  adminObject,
  BUDGET_FIELDS,
  BudgetSchema,
  fieldNames,
  fieldsObject,
  LIMIT_FIELDS,
  LimitSchema,
  NameSchema,
  Nullable,
  PerMinute,
  queryNames,
  queryParameter,
  steps,
  Unlimited,
  Usd,
} from './common.js';

export { PLAN_NAMES } from '@gateway/proto';

/** The fields a key's body may carry, in the order an unknown field's message lists them. */
const KEY_BODY_FIELDS = [
  'plan',
  'name',
  'limits',
  'budgets',
  'routing_policy',
  'catalog_fallbacks',
  'allowed_models',
  'allowed_mcp_tools',
  'log_bodies',
] as const;
/** A creation's fields: a key joins its team when created, for good (a change cannot move it). */
const KEY_CREATION_FIELDS = [...KEY_BODY_FIELDS, 'team_id'] as const;
/** A key's plan by name. */
export const PlanSchema = Type.Union(
  PLAN_NAMES.map((plan) => Type.Literal(plan)),
  { errorMessage: `'plan' must be one of ${PLAN_NAMES.join(', ')}.` },
);
/** A key's plan. */
export type Plan = Static<typeof PlanSchema>;

/** A routing policy, or null for none: in a creation too, where it means the same as leaving it out. */
const RoutingPolicySchema = Type.Union([Type.String({ pattern: '^[A-Za-z0-9._:-]{1,64}$' }), Type.Null()], {
  errorMessage: "'routing_policy' must be 1 to 64 letters, digits, '.', '_', ':' or '-', or null to remove it.",
});

/** A team id, as auth draws them. */
const TeamIdSchema = Type.String({ pattern: '^team_[A-Za-z0-9]{16}$', errorMessage: "'team_id' must be a team id (team_ and 16 letters or digits)." });

/** The body of POST /admin/v1/keys: the plan, and overrides of the plan's settings. */
export const KeyCreationSchema = steps(
  fieldNames(KEY_CREATION_FIELDS),
  Type.Object({ plan: Type.Unknown() }, { errorMessage: { required: { plan: `'plan' must be one of ${PLAN_NAMES.join(', ')}.` } } }),
  Type.Object({
    plan: PlanSchema,
    name: Type.Optional(NameSchema),
    routing_policy: Type.Optional(RoutingPolicySchema),
    catalog_fallbacks: Type.Optional(Type.Boolean({ errorMessage: "'catalog_fallbacks' must be true or false." })),
    allowed_models: Type.Optional(AllowedModelsSchema),
    allowed_mcp_tools: Type.Optional(AllowedMcpToolsSchema),
    log_bodies: Type.Optional(Type.Boolean({ errorMessage: "'log_bodies' must be true or false." })),
    team_id: Type.Optional(TeamIdSchema),
    limits: Type.Optional(
      fieldsObject(LIMIT_FIELDS, (field) =>
        Type.Union([PerMinute, Unlimited], { errorMessage: `'limits.${field}' must be a positive integer or "unlimited".` }),
      ),
    ),
    budgets: Type.Optional(
      fieldsObject(BUDGET_FIELDS, (field) =>
        Type.Union([Usd, Unlimited], { errorMessage: `'budgets.${field}' must be a positive amount of USD (at least 0.000001) or "unlimited".` }),
      ),
    ),
  }),
);
/** The body of POST /admin/v1/keys. Absent fields take the plan's values. */
export type KeyCreation = Static<typeof KeyCreationSchema>;

/** The body of PATCH /admin/v1/keys/:id: each field as in a creation, or null to take the plan's setting back. */
export const KeyChangeSchema = steps(
  fieldNames(
    KEY_BODY_FIELDS,
    'Nothing to change: send plan, name, limits, budgets, routing_policy, catalog_fallbacks, allowed_models, allowed_mcp_tools or log_bodies.',
  ),
  Type.Object({
    plan: Type.Optional(PlanSchema),
    name: Type.Optional(NameSchema),
    routing_policy: Type.Optional(RoutingPolicySchema),
    catalog_fallbacks: Type.Optional(
      Type.Union([Type.Boolean(), Type.Null()], { errorMessage: "'catalog_fallbacks' must be true or false, or null for the plan's default." }),
    ),
    allowed_models: Type.Optional(AllowedModelsSchema),
    allowed_mcp_tools: Type.Optional(AllowedMcpToolsSchema),
    log_bodies: Type.Optional(Type.Boolean({ errorMessage: "'log_bodies' must be true or false." })),
    limits: Type.Optional(
      fieldsObject(LIMIT_FIELDS, (field) =>
        Type.Union([PerMinute, Unlimited, Type.Null()], {
          errorMessage: `'limits.${field}' must be a positive integer or "unlimited", or null for the plan's limit.`,
        }),
      ),
    ),
    budgets: Type.Optional(
      fieldsObject(BUDGET_FIELDS, (field) =>
        Type.Union([Usd, Unlimited, Type.Null()], {
          errorMessage: `'budgets.${field}' must be a positive amount of USD (at least 0.000001) or "unlimited", or null for the plan's budget.`,
        }),
      ),
    ),
  }),
);
/** The body of PATCH /admin/v1/keys/:id: absent fields stay; null goes back to the plan's. */
export type KeyChange = Static<typeof KeyChangeSchema>;

/** A key as the admin API returns it; never its secret, except once in the creation response. */
export const KeySchema = adminObject('api_key', {
  name: Type.String(),
  /** A plan this edge does not know (a newer auth's) is `unknown`. */
  plan: Type.Union([PlanSchema, Type.Literal('unknown')]),
  /** Unix seconds. */
  created_at: Type.Integer(),
  /** Unix seconds, precise to a minute; null when never used. */
  last_used_at: Nullable(Type.Integer()),
  revoked: Type.Boolean(),
  /** The limits in force: the key's overrides, else its plan's; null where neither sets one. */
  limits: Type.Object({ requests_per_minute: Nullable(LimitSchema), tokens_per_minute: Nullable(LimitSchema) }),
  /** The budgets in force, in USD per UTC day and month; null: none. */
  budgets: Type.Object({ daily_usd: Nullable(Type.Number()), monthly_usd: Nullable(Type.Number()) }),
  /** This key's overrides of its plan's limits, budgets and catalog fallbacks default. */
  overrides: Type.Object({
    requests_per_minute: Type.Optional(LimitSchema),
    tokens_per_minute: Type.Optional(LimitSchema),
    catalog_fallbacks: Type.Optional(Type.Boolean()),
    daily_budget_usd: Type.Optional(BudgetSchema),
    monthly_budget_usd: Type.Optional(BudgetSchema),
  }),
  routing_policy: Nullable(Type.String()),
  /** In force: whether a request that says nothing about fallbacks uses the catalog's chain. */
  catalog_fallbacks: Type.Boolean(),
  /** The models the key may use (ids and `prefix*` patterns); null: every model. */
  allowed_models: Nullable(Type.Array(Type.String())),
  /** The MCP tools the key may list and call (namespaced tools, servers, `prefix*` patterns); null: every tool. */
  allowed_mcp_tools: Nullable(Type.Array(Type.String())),
  /** The key's team, fixed when it was created; null: none. */
  team_id: Nullable(Type.String()),
  /** Whether the request log keeps the bodies of the key's requests (its team's setting may also turn them on). */
  log_bodies: Type.Boolean(),
});
/** An API key as the admin API shows it. */
export type Key = Static<typeof KeySchema>;

/** A new key: the secret is in this one response only. */
export const CreatedKeySchema = Type.Intersect([KeySchema, Type.Object({ secret: Type.String() })]);
export type CreatedKey = Static<typeof CreatedKeySchema>;

/** The query of GET /admin/v1/keys: only one team's keys. */
export const KeyListQuerySchema = steps(
  queryNames(['team_id']),
  Type.Object({ team_id: Type.Optional(queryParameter('team_id', '^team_[A-Za-z0-9]{16}$', "'team_id' must be a team id (team_ and 16 letters or digits).")) }),
);
export type KeyListQuery = Static<typeof KeyListQuerySchema>;
