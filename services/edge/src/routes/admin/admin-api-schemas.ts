/**
 * The admin API's contract, declared once: the TypeBox schemas of its request bodies and query
 * strings, which the routes validate with (routes/admin/admin-keys.ts, routes/api/usage.ts), and of its
 * answers, whose static types the routes build and the web console reads
 * (console/src/admin-api.ts imports the types only, so the console bundles no TypeBox).
 *
 * A schema node that a request can break carries the message it answers with as `errorMessage`
 * (ajv-errors): one message for any failure of a value, or one per keyword of an object. An object
 * is checked in steps (an `allOf`), each complete before the next, so that the first error is the
 * first fault a reader would name: unknown field names, then a missing required field, then the
 * values in the order of the fields. `{field}` in a message stands for the unknown field's name.
 */
import { MAX_ALLOW_LIST_ENTRIES, MAX_ALLOW_LIST_ENTRY_LENGTH } from '@gateway/catalog';
import { PLAN_NAMES } from '@gateway/proto';
import { type Static, type TOptional, type TProperties, type TSchema, Type } from '@sinclair/typebox';

export { PLAN_NAMES } from '@gateway/proto';

/** The message of a body, or of its `limits` or `budgets`, that is not a JSON object. */
export const NOT_AN_OBJECT = 'The request body must be a JSON object.';

const LIMIT_FIELDS = ['requests_per_minute', 'tokens_per_minute'] as const;
const BUDGET_FIELDS = ['daily_usd', 'monthly_usd'] as const;
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
/** The fields a team's body may carry. */
const TEAM_BODY_FIELDS = ['name', 'limits', 'budgets', 'allowed_models', 'allowed_mcp_tools', 'log_bodies'] as const;

/** An object holding only `fields`, whatever their values; `emptyMessage` refuses an empty one. */
function fieldNames(fields: readonly string[], emptyMessage?: string) {
  const errorMessage = {
    type: NOT_AN_OBJECT,
    additionalProperties: `Unknown field '{field}'. Allowed: ${fields.join(', ')}.`,
    ...(emptyMessage === undefined ? {} : { minProperties: emptyMessage }),
  };
  const properties = Object.fromEntries(fields.map((field) => [field, Type.Optional(Type.Unknown())]));
  return Type.Object(properties, { additionalProperties: false, ...(emptyMessage === undefined ? {} : { minProperties: 1 }), errorMessage });
}

/**
 * Checks of one object in steps, each complete before the next. TypeBox gives an intersection of
 * objects a `type` of its own, which fails before any step: it carries the steps' message.
 */
function steps<Schemas extends TSchema[]>(...schemas: [...Schemas]) {
  return Type.Intersect(schemas, { errorMessage: { type: NOT_AN_OBJECT } });
}

/** `limits` or `budgets`: an object of only `fields`, each optional and valued by `schemaOf(field)`. */
function fieldsObject<Field extends string, Value extends TSchema>(fields: readonly Field[], schemaOf: (field: Field) => Value) {
  const properties = Object.fromEntries(fields.map((field) => [field, Type.Optional(schemaOf(field)) as TOptional<Value>])) as {
    [Name in Field]: TOptional<Value>;
  };
  return steps(fieldNames(fields), Type.Object(properties));
}

/** A key's plan by name. */
export const PlanSchema = Type.Union(
  PLAN_NAMES.map((plan) => Type.Literal(plan)),
  { errorMessage: `'plan' must be one of ${PLAN_NAMES.join(', ')}.` },
);
/** A key's plan. */
export type Plan = Static<typeof PlanSchema>;

const NameSchema = Type.String({ maxLength: 200, errorMessage: "'name' must be a string of at most 200 characters." });

/** A routing policy, or null for none: in a creation too, where it means the same as leaving it out. */
const RoutingPolicySchema = Type.Union([Type.String({ pattern: '^[A-Za-z0-9._:-]{1,64}$' }), Type.Null()], {
  errorMessage: "'routing_policy' must be 1 to 64 letters, digits, '.', '_', ':' or '-', or null to remove it.",
});

/**
 * A model allow-list (ids and `prefix*` patterns, @gateway/catalog's rules), or null for every
 * model: in a creation too, where it means the same as leaving it out.
 */
const AllowedModelsSchema = Type.Union(
  [
    Type.Array(Type.String({ minLength: 1, maxLength: MAX_ALLOW_LIST_ENTRY_LENGTH, pattern: '^[^\\s*]*\\*?$' }), { maxItems: MAX_ALLOW_LIST_ENTRIES }),
    Type.Null(),
  ],
  {
    errorMessage: `'allowed_models' must be a list of at most ${MAX_ALLOW_LIST_ENTRIES} model ids or "prefix*" patterns (each 1 to ${MAX_ALLOW_LIST_ENTRY_LENGTH} characters, no whitespace, "*" only as the last character), or null for every model.`,
  },
);

/**
 * An MCP tool allow-list (namespaced tools `<server>__<tool>`, servers, `prefix*` patterns), or
 * null for every tool: in a creation too, where it means the same as leaving it out.
 */
const AllowedMcpToolsSchema = Type.Union(
  [
    Type.Array(Type.String({ minLength: 1, maxLength: MAX_ALLOW_LIST_ENTRY_LENGTH, pattern: '^[^\\s*]*\\*?$' }), { maxItems: MAX_ALLOW_LIST_ENTRIES }),
    Type.Null(),
  ],
  {
    errorMessage: `'allowed_mcp_tools' must be a list of at most ${MAX_ALLOW_LIST_ENTRIES} MCP tool names ("<server>__<tool>"), server names or "prefix*" patterns (each 1 to ${MAX_ALLOW_LIST_ENTRY_LENGTH} characters, no whitespace, "*" only as the last character), or null for every tool.`,
  },
);

const PerMinute = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const Unlimited = Type.Literal('unlimited');

/**
 * The USD amounts whose micro-dollars (`Math.round(usd * 1e6)`, what auth stores) are at least 1
 * and a safe integer: exactly the doubles from 5e-7 to 9007199254.74099, since multiplying and
 * rounding never reverse an order (the bounds were found by stepping across them; tests pin both).
 */
const Usd = Type.Number({ minimum: 5e-7, maximum: 9007199254.74099 });

/** A per-minute limit: a count, or no limit at all. */
export const LimitSchema = Type.Union([PerMinute, Unlimited]);
export type Limit = Static<typeof LimitSchema>;
/** A budget in USD, or none. */
export const BudgetSchema = Type.Union([Usd, Unlimited]);
export type Budget = Static<typeof BudgetSchema>;

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

const Nullable = <Schema extends TSchema>(schema: Schema) => Type.Union([schema, Type.Null()]);

/** An object the admin API answers with: its kind in `object`, its id, then its `properties`. */
function adminObject<Kind extends string, Properties extends TProperties>(kind: Kind, properties: Properties) {
  return Type.Object({ object: Type.Literal(kind), id: Type.String(), ...properties });
}

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

/** A team's limits and budgets in a body: a number, or "unlimited" (or null, in a change) for none. */
function teamLimits(nullable: boolean) {
  const none = nullable ? ', or "unlimited" or null for none' : ' or "unlimited"';
  return {
    limits: Type.Optional(
      fieldsObject(LIMIT_FIELDS, (field) =>
        Type.Union([PerMinute, Unlimited, ...(nullable ? [Type.Null()] : [])], { errorMessage: `'limits.${field}' must be a positive integer${none}.` }),
      ),
    ),
    budgets: Type.Optional(
      fieldsObject(BUDGET_FIELDS, (field) =>
        Type.Union([Usd, Unlimited, ...(nullable ? [Type.Null()] : [])], {
          errorMessage: `'budgets.${field}' must be a positive amount of USD (at least 0.000001)${none}.`,
        }),
      ),
    ),
  };
}

const TeamNameSchema = Type.String({ minLength: 1, maxLength: 200, errorMessage: "'name' must be a string of 1 to 200 characters." });

/** The body of POST /admin/v1/teams: a name, and the team's limits, budgets and allow-list (each absent: none). */
export const TeamCreationSchema = steps(
  fieldNames(TEAM_BODY_FIELDS),
  Type.Object({ name: Type.Unknown() }, { errorMessage: { required: { name: "'name' must be a string of 1 to 200 characters." } } }),
  Type.Object({
    name: TeamNameSchema,
    ...teamLimits(false),
    allowed_models: Type.Optional(AllowedModelsSchema),
    allowed_mcp_tools: Type.Optional(AllowedMcpToolsSchema),
    log_bodies: Type.Optional(Type.Boolean({ errorMessage: "'log_bodies' must be true or false." })),
  }),
);
export type TeamCreation = Static<typeof TeamCreationSchema>;

/** The body of PATCH /admin/v1/teams/:id: absent fields stay; "unlimited" or null removes a limit or budget, null the allow-list. */
export const TeamChangeSchema = steps(
  fieldNames(TEAM_BODY_FIELDS, 'Nothing to change: send name, limits, budgets, allowed_models, allowed_mcp_tools or log_bodies.'),
  Type.Object({
    name: Type.Optional(TeamNameSchema),
    ...teamLimits(true),
    allowed_models: Type.Optional(AllowedModelsSchema),
    allowed_mcp_tools: Type.Optional(AllowedMcpToolsSchema),
    log_bodies: Type.Optional(Type.Boolean({ errorMessage: "'log_bodies' must be true or false." })),
  }),
);
export type TeamChange = Static<typeof TeamChangeSchema>;

/** A team as the admin API returns it. */
export const TeamSchema = adminObject('team', {
  name: Type.String(),
  /** Unix seconds. */
  created_at: Type.Integer(),
  /** Per minute over all the team's keys; null: none. */
  limits: Type.Object({ requests_per_minute: Nullable(Type.Integer()), tokens_per_minute: Nullable(Type.Integer()) }),
  /** USD per UTC day and month over all the team's keys; null: none. */
  budgets: Type.Object({ daily_usd: Nullable(Type.Number()), monthly_usd: Nullable(Type.Number()) }),
  /** The models the team's keys may use; null: every model. */
  allowed_models: Nullable(Type.Array(Type.String())),
  /** The MCP tools the team's keys may list and call; null: every tool. */
  allowed_mcp_tools: Nullable(Type.Array(Type.String())),
  /** The team's live (not revoked) keys. */
  key_count: Type.Integer(),
  /** Whether the request log keeps the bodies of every request of the team's keys. */
  log_bodies: Type.Boolean(),
});
export type Team = Static<typeof TeamSchema>;

/** The query of GET /admin/v1/keys: only one team's keys. */
export const KeyListQuerySchema = steps(
  queryNames(['team_id']),
  Type.Object({ team_id: Type.Optional(queryParameter('team_id', '^team_[A-Za-z0-9]{16}$', "'team_id' must be a team id (team_ and 16 letters or digits).")) }),
);
export type KeyListQuery = Static<typeof KeyListQuerySchema>;

/** A bucket's width. */
export type BucketWidth = 'hour' | 'day';
/** What usage can be grouped by. */
export type Grouping = 'key' | 'model' | 'plan' | 'team';

/** A query string holding only `names`. */
function queryNames(names: readonly string[]) {
  const properties = Object.fromEntries(names.map((name) => [name, Type.Optional(Type.Unknown())]));
  return Type.Object(properties, {
    additionalProperties: false,
    errorMessage: { additionalProperties: `Unknown query parameter '{field}'. Allowed: ${names.join(', ')}.` },
  });
}

/** A query parameter given once (a repeated one arrives as an array) and matching `pattern`. */
function queryParameter(name: string, pattern: string, message: string) {
  return Type.String({ pattern, errorMessage: { type: `'${name}' must be given once.`, pattern: message } });
}

const UnixSeconds = (name: string) => queryParameter(name, '^[0-9]{1,12}$', `'${name}' must be a time in Unix seconds (a non-negative integer).`);
const KeyIdParameter = queryParameter('key_id', '^key_[A-Za-z0-9]{16}$', "'key_id' must be a key id (key_ and 16 letters or digits).");
const TeamIdParameter = queryParameter('team_id', '^team_[A-Za-z0-9]{16}$', "'team_id' must be a team id (team_ and 16 letters or digits).");

/** A usage query's bucket width as the caller may spell it. */
export const BUCKET_ALIASES = { hour: 'hour', '1h': 'hour', day: 'day', '1d': 'day' } as const satisfies Record<string, BucketWidth>;

/**
 * The query of GET /v1/usage (`groupings` ['model']) and GET /admin/v1/usage (every grouping, and
 * key_id), once start_time, end_time and bucket_width (OpenAI's names) are read as start, end and
 * bucket. That `end` is not before `start` is the route's to check.
 */
function usageQuerySchema(groupings: readonly Grouping[], admin: boolean) {
  const names = ['start', 'start_time', 'end', 'end_time', 'bucket', 'bucket_width', 'group_by', ...(admin ? ['key_id', 'team_id'] : [])];
  const grouping = `\\s*(?:${groupings.join('|')})\\s*`;
  return steps(
    queryNames(names),
    Type.Object({ start: Type.Unknown() }, { errorMessage: { required: { start: "'start' is required: the range's start in Unix seconds." } } }),
    Type.Object({
      start: UnixSeconds('start'),
      end: Type.Optional(UnixSeconds('end')),
      bucket: Type.Optional(
        Type.Unsafe<keyof typeof BUCKET_ALIASES>({
          type: 'string',
          enum: Object.keys(BUCKET_ALIASES),
          errorMessage: { type: "'bucket' must be given once.", enum: "'bucket' must be 'hour' or 'day'." },
        }),
      ),
      group_by: Type.Optional(
        queryParameter('group_by', `^(?:${grouping}(?:,${grouping})*)?$`, `'group_by' takes a comma-separated list of ${groupings.join(', ')}.`),
      ),
      ...(admin ? { key_id: Type.Optional(KeyIdParameter), team_id: Type.Optional(TeamIdParameter) } : {}),
    }),
  );
}

/** The query of GET /v1/usage: a key's own usage, by model at most. */
export const KeyUsageQuerySchema = usageQuerySchema(['model'], false);
/** The query of GET /admin/v1/usage. */
export const AdminUsageQuerySchema = usageQuerySchema(['key', 'model', 'plan', 'team'], true);
/** A usage query as the route reads it. */
export type UsageQueryString = Static<typeof KeyUsageQuerySchema> & { key_id?: string; team_id?: string };

/** The query of GET /admin/v1/requests: from 1 to 200 (leading zeros allowed), 50 when absent. */
export const RecentRequestsQuerySchema = steps(
  queryNames(['limit', 'key_id']),
  Type.Object({
    limit: Type.Optional(queryParameter('limit', '^(?!0+$)(?:[0-9]{1,2}|[01][0-9]{2}|200)$', "'limit' must be an integer from 1 to 200.")),
    key_id: Type.Optional(KeyIdParameter),
  }),
);
export type RecentRequestsQuery = Static<typeof RecentRequestsQuerySchema>;

/** The parameters only the request log answers (the latest requests take limit and key_id alone). */
export const REQUEST_LOG_PARAMETERS = [
  'start',
  'end',
  'team_id',
  'model',
  'provider',
  'deployment',
  'status',
  'error_code',
  'api',
  'outcome',
  'min_latency_ms',
  'max_latency_ms',
  'min_cost_usd',
  'max_cost_usd',
  'sort',
  'order',
  'cursor',
  'format',
] as const;

const NonNegativeInteger = (name: string) => queryParameter(name, '^[0-9]{1,9}$', `'${name}' must be a non-negative integer.`);
const UsdAmount = (name: string) => queryParameter(name, '^[0-9]{1,9}(\\.[0-9]{1,12})?$', `'${name}' must be an amount in USD (at most 12 decimals).`);
const Word = (name: string, what: string) => queryParameter(name, '^[A-Za-z0-9._:/-]{1,200}$', `'${name}' must be ${what}.`);

/** The query string of GET /admin/v1/requests: a search of the request log (its filters, order, page and export format). */
export const RequestLogQuerySchema = steps(
  queryNames(['limit', 'key_id', ...REQUEST_LOG_PARAMETERS]),
  Type.Object({
    limit: Type.Optional(queryParameter('limit', '^(?!0+$)(?:[0-9]{1,3}|1000)$', "'limit' must be an integer from 1 to 1000.")),
    key_id: Type.Optional(KeyIdParameter),
    start: Type.Optional(UnixSeconds('start')),
    end: Type.Optional(UnixSeconds('end')),
    team_id: Type.Optional(TeamIdParameter),
    model: Type.Optional(Word('model', 'a model id')),
    provider: Type.Optional(Word('provider', 'a provider name')),
    deployment: Type.Optional(
      queryParameter(
        'deployment',
        '^[0-9]{1,4}:[A-Za-z0-9._:/\\[\\]-]{1,200}$',
        "'deployment' must be a deployment id (`<index>:<origin>`, as a request shows it).",
      ),
    ),
    status: Type.Optional(queryParameter('status', '^[1-5][0-9]{2}$', "'status' must be an HTTP status (100 to 599).")),
    error_code: Type.Optional(Word('error_code', 'an error code')),
    api: Type.Optional(
      queryParameter('api', '^(chat_completions|responses|messages|embeddings)$', "'api' must be one of chat_completions, responses, messages, embeddings."),
    ),
    outcome: Type.Optional(
      queryParameter('outcome', '^(completed|failed|cancelled|refused)$', "'outcome' must be one of completed, failed, cancelled, refused."),
    ),
    min_latency_ms: Type.Optional(NonNegativeInteger('min_latency_ms')),
    max_latency_ms: Type.Optional(NonNegativeInteger('max_latency_ms')),
    min_cost_usd: Type.Optional(UsdAmount('min_cost_usd')),
    max_cost_usd: Type.Optional(UsdAmount('max_cost_usd')),
    sort: Type.Optional(queryParameter('sort', '^(time|latency|cost)$', "'sort' must be one of time, latency, cost.")),
    order: Type.Optional(queryParameter('order', '^(asc|desc)$', "'order' must be asc or desc.")),
    cursor: Type.Optional(queryParameter('cursor', '^[A-Za-z0-9_-]{1,1000}$', "'cursor' must be the next_cursor of a previous page.")),
    format: Type.Optional(queryParameter('format', '^(json|csv|jsonl)$', "'format' must be one of json, csv, jsonl.")),
  }),
);
export type RequestLogQuery = Static<typeof RequestLogQuerySchema>;

/** A request as the request log shows it: the latest requests' fields and the log's own. */
export type LoggedRequest = GatewayRequest & {
  team_id: string | null;
  api: string;
  response_id: string | null;
  trace_id: string | null;
  http_status: number | null;
  /** The deployment that answered (`<index>:<origin>`, `0:in-process` for a simulated model); null when none did. */
  deployment_id: string | null;
  fallback_models: string[];
  cached_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
  cost_pico_usd: string;
  time_to_first_token_ms: number | null;
  user_agent: string | null;
};

/**
 * A request's bodies as GET /admin/v1/requests/{id} shows them (never a search or an export):
 * redacted of secrets and capped by the edge that served it; a truncated body ends with a marker
 * saying how many bytes were cut.
 */
export interface LoggedBodies {
  request: string;
  response: string;
  request_truncated: boolean;
  response_truncated: boolean;
  request_truncated_bytes: number;
  response_truncated_bytes: number;
}

/** A request's detail: its fields, and its bodies (null when none are kept, or when the caller may not see them). */
export type LoggedRequestDetail = LoggedRequest & { bodies: LoggedBodies | null };

/** Usage totals of one group where the query groups by key, model or plan (or of everything). */
export const UsageResultSchema = Type.Object({
  object: Type.Literal('usage.result'),
  key_id: Type.Optional(Type.String()),
  model: Type.Optional(Type.String()),
  plan: Type.Optional(Type.String()),
  /** Grouped by team: the team's id; null for keys without a team. */
  team_id: Type.Optional(Nullable(Type.String())),
  requests: Type.Integer(),
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  cached_tokens: Type.Integer(),
  /** Prompt tokens written to the provider's cache: a part of prompt_tokens, apart from cached_tokens (cache reads). */
  cache_write_tokens: Type.Integer(),
  cost_usd: Type.Number(),
  /** The exact cost: pico-USD (10^-12 USD) as a decimal integer. */
  cost_pico_usd: Type.String(),
  errors: Type.Integer(),
  fallbacks: Type.Integer(),
});
export type UsageResult = Static<typeof UsageResultSchema>;

/** One non-empty time bucket of a usage page. */
export const UsageBucketSchema = Type.Object({
  object: Type.Literal('bucket'),
  /** Unix seconds. */
  start_time: Type.Integer(),
  end_time: Type.Integer(),
  results: Type.Array(UsageResultSchema),
});
export type UsageBucket = Static<typeof UsageBucketSchema>;

/** GET /v1/usage and /admin/v1/usage: only non-empty buckets, ascending. */
export const UsagePageSchema = Type.Object({
  object: Type.Literal('page'),
  bucket: Type.Union([Type.Literal('hour'), Type.Literal('day')]),
  start: Type.Integer(),
  end: Type.Integer(),
  group_by: Type.Array(Type.Union([Type.Literal('key'), Type.Literal('model'), Type.Literal('plan'), Type.Literal('team')])),
  data: Type.Array(UsageBucketSchema),
  totals: UsageResultSchema,
  has_more: Type.Boolean(),
  /** Keys left out because their usage could not be read now (a Redis shard failing over). */
  unavailable_key_ids: Type.Optional(Type.Array(Type.String())),
});
export type UsagePage = Static<typeof UsagePageSchema>;

/** One completion or embeddings request the gateway handled (GET /admin/v1/requests). */
export const GatewayRequestSchema = adminObject('gateway.request', {
  /** The kind of API: `chat` (chat completions, responses, messages) or `embeddings`. */
  operation: Type.String(),
  request_id: Type.String(),
  key_id: Type.String(),
  /** Unix milliseconds. */
  created_at: Type.Integer(),
  requested_model: Type.String(),
  model: Type.String(),
  provider: Type.String(),
  stream: Type.Boolean(),
  /** unspecified from a metering that does not say. */
  /** refused: by the request log only, a request refused before it reached a model (a rate limit, a budget, an allow-list). */
  outcome: Type.Union([Type.Literal('completed'), Type.Literal('cancelled'), Type.Literal('failed'), Type.Literal('refused'), Type.Literal('unspecified')]),
  /** Why a failed request failed (the error envelope's code), where the gateway says. */
  error_code: Nullable(Type.String()),
  latency_ms: Type.Integer(),
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  cost_usd: Type.Number(),
  fallbacks: Type.Integer(),
  /** For `"model": "auto"` only. */
  auto: Nullable(Type.Object({ score: Type.Number(), tier: Type.String(), policy: Type.String() })),
});
export type GatewayRequest = Static<typeof GatewayRequestSchema>;

/** A model's health as the gateway sees it (GET /admin/v1/models). */
export const ModelHealthSchema = Type.Object({
  id: Type.String(),
  provider: Type.String(),
  available: Type.Boolean(),
  retry_after_ms: Nullable(Type.Integer()),
  quality_tier: Nullable(Type.String()),
});
export type ModelHealth = Static<typeof ModelHealthSchema>;

/** A list answer. */
export interface List<T> {
  object: 'list';
  data: T[];
}

/** The roles of the admin API. */
export const ROLE_NAMES = ['admin', 'viewer'] as const;
const RoleSchema = Type.Union(
  ROLE_NAMES.map((role) => Type.Literal(role)),
  { errorMessage: `'role' must be one of ${ROLE_NAMES.join(', ')}.` },
);

/** The body of POST /admin/v1/admin-tokens. */
export const AdminTokenCreationSchema = steps(
  fieldNames(['role', 'name']),
  Type.Object({ role: Type.Unknown() }, { errorMessage: { required: { role: `'role' must be one of ${ROLE_NAMES.join(', ')}.` } } }),
  Type.Object({ role: RoleSchema, name: Type.Optional(NameSchema) }),
);
export type AdminTokenCreation = Static<typeof AdminTokenCreationSchema>;

/** An admin token as the admin API shows it; never its secret, except once in the creation response. */
export const AdminTokenSchema = adminObject('admin_token', {
  name: Type.String(),
  /** A role this edge does not know (a newer auth's) is `unknown`. */
  role: Type.Union([RoleSchema, Type.Literal('unknown')]),
  /** Unix seconds. */
  created_at: Type.Integer(),
  revoked: Type.Boolean(),
  /** The subject of whoever created it (`static-token`, an admin token's id, `cli`, ...). */
  created_by: Type.String(),
});
export type AdminToken = Static<typeof AdminTokenSchema>;

/** A new admin token: the secret (`bra-...`) is in this one response only. */
export const CreatedAdminTokenSchema = Type.Intersect([AdminTokenSchema, Type.Object({ secret: Type.String() })]);
export type CreatedAdminToken = Static<typeof CreatedAdminTokenSchema>;

/** GET /admin/v1/me: who the caller is, for the console to show only what the role may do. */
export const PrincipalSchema = Type.Object({
  object: Type.Literal('admin.principal'),
  subject: Type.String(),
  role: RoleSchema,
  via: Type.Union([Type.Literal('static_token'), Type.Literal('admin_token'), Type.Literal('sso_session')]),
  /** The SSO user's name (email), when the identity provider gave one; null for a token. */
  name: Nullable(Type.String()),
  /** When an SSO session ends (Unix seconds); null for a credential that does not expire. */
  expires_at: Nullable(Type.Integer()),
});
export type Principal = Static<typeof PrincipalSchema>;

/** The query of GET /admin/v1/audit. */
export const AuditQuerySchema = steps(
  queryNames(['limit', 'cursor', 'target_id', 'actor']),
  Type.Object({
    limit: Type.Optional(queryParameter('limit', '^(?!0+$)(?:[0-9]{1,2}|[01][0-9]{2}|200)$', "'limit' must be an integer from 1 to 200.")),
    cursor: Type.Optional(queryParameter('cursor', '^[0-9]{1,20}-[0-9]{1,20}$', "'cursor' must be the next_cursor of a previous page.")),
    target_id: Type.Optional(queryParameter('target_id', '^[A-Za-z0-9_-]{1,64}$', "'target_id' must be an id (a key's or an admin token's).")),
    actor: Type.Optional(queryParameter('actor', '^.{1,512}$', "'actor' must be an actor's subject, at most 512 characters.")),
  }),
);
export type AuditQuery = Static<typeof AuditQuerySchema>;

/** One admin change (GET /admin/v1/audit). */
export const AuditEntrySchema = adminObject('audit_entry', {
  /** Unix milliseconds when the change applied. */
  created_at_ms: Type.Integer(),
  actor: Type.Object({ subject: Type.String(), role: Type.String(), via: Type.String() }),
  /** `key.create`, `key.update`, `key.revoke`, `admin_token.create`, `admin_token.revoke`, `team.create`, `team.update`, `team.delete` */
  action: Type.String(),
  target_id: Type.String(),
  /** The public facts (auth's KeyInfo or AdminTokenInfo) before the change; null for a creation. */
  before: Type.Unknown(),
  /** The public facts after the change. */
  after: Type.Unknown(),
  request_id: Nullable(Type.String()),
});
export type AuditEntry = Static<typeof AuditEntrySchema>;

/** GET /admin/v1/audit: newest first; `next_cursor` is the `cursor` of the next page. */
export interface AuditPage extends List<AuditEntry> {
  has_more: boolean;
  next_cursor: string | null;
}

/** The transports an upstream MCP server can be reached by. */
const McpTransportSchema = Type.Union([Type.Literal('streamable_http'), Type.Literal('sse')], {
  errorMessage: "'transport' must be streamable_http or sse.",
});
const MCP_SERVER_FIELDS = ['url', 'transport', 'headers', 'auth', 'description'] as const;

/**
 * The body of PUT /admin/v1/mcp-servers/:name: where the server is, how it is reached, and the
 * headers (API keys) sent to it, stored encrypted; `headers` left out keeps the stored ones.
 */
export const McpServerPutSchema = steps(
  fieldNames(MCP_SERVER_FIELDS),
  Type.Object({ url: Type.Unknown() }, { errorMessage: { required: { url: "'url' is required: the server's MCP endpoint." } } }),
  Type.Object({
    url: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://', errorMessage: "'url' must be an http or https URL." }),
    transport: Type.Optional(McpTransportSchema),
    headers: Type.Optional(
      Type.Record(Type.String(), Type.String({ maxLength: 8192 }), {
        maxProperties: 20,
        errorMessage: "'headers' must be an object of at most 20 header names to string values.",
      }),
    ),
    auth: Type.Optional(
      Type.Union(
        [
          Type.Literal('none'),
          Type.Literal('oauth'),
          Type.Object({ type: Type.Literal('none') }, { additionalProperties: false }),
          Type.Object(
            {
              type: Type.Literal('oauth'),
              client_id: Type.Optional(Type.String({ maxLength: 500 })),
              client_secret: Type.Optional(Type.String({ maxLength: 2000 })),
              scopes: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 50 })),
            },
            { additionalProperties: false },
          ),
        ],
        {
          errorMessage:
            '\'auth\' must be none, oauth, or {type: "oauth", client_id?, client_secret?, scopes?} (per-user OAuth credentials; the client secret is stored encrypted and kept when left out).',
        },
      ),
    ),
    description: Type.Optional(Type.String({ maxLength: 500, errorMessage: "'description' must be a string of at most 500 characters." })),
  }),
);
/** The body of PUT /admin/v1/mcp-servers/:name. */
export type McpServerPut = Static<typeof McpServerPutSchema>;

/** An upstream MCP server as the admin API shows it: never its headers' values. */
export const McpServerSchema = Type.Object({
  object: Type.Literal('mcp_server'),
  name: Type.String(),
  url: Type.String(),
  transport: Type.Union([Type.Literal('streamable_http'), Type.Literal('sse')]),
  /** The names of the headers sent to it; their values are stored encrypted and never shown. */
  header_names: Type.Array(Type.String()),
  auth: Type.Union([Type.Literal('none'), Type.Literal('oauth')]),
  /** With auth oauth: the OAuth client (never its secret: whether one is stored). */
  oauth: Nullable(Type.Object({ client_id: Type.String(), scopes: Type.Array(Type.String()), client_secret_set: Type.Boolean() })),
  description: Type.String(),
  /** Unix seconds of its latest change. */
  updated_at: Type.Integer(),
});
/** An upstream MCP server as the admin API shows it. */
export type McpServer = Static<typeof McpServerSchema>;
