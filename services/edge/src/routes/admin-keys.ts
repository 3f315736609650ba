/**
 * The admin API: /admin/v1/keys to create, list, read, change and revoke API keys. It exists only
 * when EDGE_ADMIN_TOKEN is set (otherwise every path is a plain 404), and answers only requests
 * bearing that token: none or a wrong one is a 401, a gateway API key (`br-...`) a 403. Every
 * operation is an auth RPC, so the admin API and auth's CLI share one code path (auth's KeyStore).
 * Request bodies are checked by their TypeBox schemas, each node carrying the message it answers.
 */
import { type Static, type TObject, type TOptional, type TSchema, Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { type ValueError, ValueErrorType } from '@sinclair/typebox/errors';
import type { FastifyInstance, FastifyRequest, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
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
import type { EdgeDependencies } from '../dependencies.js';
import { invalid, type RequestError } from '../errors.js';
import { adminTokenHook } from './admin-token.js';

const PLANS: Record<'starter' | 'pro' | 'enterprise', Plan> = { starter: 'PLAN_STARTER', pro: 'PLAN_PRO', enterprise: 'PLAN_ENTERPRISE' };
const PLAN_NAMES: Record<string, string> = { PLAN_STARTER: 'starter', PLAN_PRO: 'pro', PLAN_ENTERPRISE: 'enterprise' };
const LIMIT_FIELDS = ['requests_per_minute', 'tokens_per_minute'] as const;
/** The budget fields of a body's `budgets`. */
const BUDGET_JSON_FIELDS = ['daily_usd', 'monthly_usd'] as const;
type BudgetJsonField = (typeof BUDGET_JSON_FIELDS)[number];
/** The fields a key's body may carry, in the order an unknown field's message lists them. */
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

/** The message of a body, or of its `limits` or `budgets`, that is not a JSON object. */
const NOT_AN_OBJECT = 'The request body must be a JSON object.';

/** The messages of an object node, one per keyword it can fail. */
interface ObjectMessages {
  /** The value is no JSON object. */
  type: string;
  /** A field the object does not hold; `{field}` stands for its name. */
  additionalProperties: string;
  /** The object is empty. */
  minProperties?: string;
}

/**
 * What the admin API answers when a value breaks a schema node, kept on the node as `errorMessage`
 * (in the manner of ajv-errors): one message for any failure of a value, one per keyword for an
 * object. Codes and params follow from the failure (see `refusal`).
 */
type ErrorMessage = string | ObjectMessages;

/**
 * An object node that holds only `fields`, each optional and valued by `schemaOf(field)`; with
 * `emptyMessage`, an empty object is refused with it.
 */
function fieldsObject<Field extends string, Value extends TSchema>(
  fields: readonly Field[],
  schemaOf: (field: Field) => Value,
  emptyMessage?: string,
): TObject<{ [Name in Field]: TOptional<Value> }> {
  const properties = Object.fromEntries(fields.map((field) => [field, Type.Optional(schemaOf(field)) as TOptional<Value>])) as {
    [Name in Field]: TOptional<Value>;
  };
  const errorMessage: ErrorMessage = { type: NOT_AN_OBJECT, additionalProperties: `Unknown field '{field}'. Allowed: ${fields.join(', ')}.` };
  if (emptyMessage === undefined) return Type.Object(properties, { additionalProperties: false, errorMessage });
  return Type.Object(properties, { additionalProperties: false, minProperties: 1, errorMessage: { ...errorMessage, minProperties: emptyMessage } });
}

const PlanSchema = Type.Union([Type.Literal('starter'), Type.Literal('pro'), Type.Literal('enterprise')], {
  errorMessage: `'plan' must be one of ${Object.keys(PLANS).join(', ')}.`,
});

const NameSchema = Type.String({ maxLength: 200, errorMessage: "'name' must be a string of at most 200 characters." });

/** A routing policy, or null for none: in a creation too, where it means the same as leaving it out. */
const RoutingPolicySchema = Type.Union([Type.String({ pattern: '^[A-Za-z0-9._:-]{1,64}$' }), Type.Null()], {
  errorMessage: "'routing_policy' must be 1 to 64 letters, digits, '.', '_', ':' or '-', or null to remove it.",
});

const PerMinute = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

/**
 * The USD amounts whose micro-dollars (`Math.round(usd * 1e6)`, what auth stores) are at least 1
 * and a safe integer: exactly the doubles from 5e-7 to 9007199254.74099, since multiplying and
 * rounding never reverse an order (the bounds were found by stepping across them; tests pin both).
 */
const Usd = Type.Number({ minimum: 5e-7, maximum: 9007199254.74099 });

const Unlimited = Type.Literal('unlimited');

/** The fields of a created key: the plan, and overrides of the plan's settings. */
const CreateKeyBodySchema = Type.Intersect([
  // The field names first, so that an unknown field is named before any value is judged, the
  // missing plan included (JSON schema checks `required` before `additionalProperties`).
  fieldsObject(KEY_BODY_FIELDS, () => Type.Unknown()),
  Type.Object({
    plan: PlanSchema,
    name: Type.Optional(NameSchema),
    routing_policy: Type.Optional(RoutingPolicySchema),
    catalog_fallbacks: Type.Optional(Type.Boolean({ errorMessage: "'catalog_fallbacks' must be true or false." })),
    limits: Type.Optional(
      fieldsObject(LIMIT_FIELDS, (field) =>
        Type.Union([PerMinute, Unlimited], { errorMessage: `'limits.${field}' must be a positive integer or "unlimited".` }),
      ),
    ),
    budgets: Type.Optional(
      fieldsObject(BUDGET_JSON_FIELDS, (field) =>
        Type.Union([Usd, Unlimited], { errorMessage: `'budgets.${field}' must be a positive amount of USD (at least 0.000001) or "unlimited".` }),
      ),
    ),
  }),
]);
type CreateKeyBody = Static<typeof CreateKeyBodySchema>;

/** The changes to a key: each field as in a creation, or null to take the plan's setting back. */
const UpdateKeyBodySchema = Type.Intersect([
  fieldsObject(KEY_BODY_FIELDS, () => Type.Unknown(), 'Nothing to change: send plan, name, limits, budgets, routing_policy or catalog_fallbacks.'),
  Type.Object({
    plan: Type.Optional(PlanSchema),
    name: Type.Optional(NameSchema),
    routing_policy: Type.Optional(RoutingPolicySchema),
    catalog_fallbacks: Type.Optional(
      Type.Union([Type.Boolean(), Type.Null()], { errorMessage: "'catalog_fallbacks' must be true or false, or null for the plan's default." }),
    ),
    limits: Type.Optional(
      fieldsObject(LIMIT_FIELDS, (field) =>
        Type.Union([PerMinute, Unlimited, Type.Null()], {
          errorMessage: `'limits.${field}' must be a positive integer or "unlimited", or null for the plan's limit.`,
        }),
      ),
    ),
    budgets: Type.Optional(
      fieldsObject(BUDGET_JSON_FIELDS, (field) =>
        Type.Union([Usd, Unlimited, Type.Null()], {
          errorMessage: `'budgets.${field}' must be a positive amount of USD (at least 0.000001) or "unlimited", or null for the plan's budget.`,
        }),
      ),
    ),
  }),
]);
type UpdateKeyBody = Static<typeof UpdateKeyBodySchema>;

/** A JSON pointer's last segment, unescaped, and the pointer to its parent. */
function splitPointer(pointer: string): { parent: string; key: string } {
  const cut = pointer.lastIndexOf('/');
  return { parent: pointer.slice(0, cut), key: unescapePointerSegment(pointer.slice(cut + 1)) };
}

function unescapePointerSegment(segment: string): string {
  return segment.replaceAll('~1', '/').replaceAll('~0', '~');
}

/**
 * A TypeBox error as fastify's validation error, shaped as Ajv's (keyword, instancePath, params),
 * with the message of the schema node that failed. Failures that are not about an object keep
 * TypeBox's name for them as their keyword ('Union', 'StringMaxLength').
 */
function validationError(error: ValueError): FastifySchemaValidationError {
  const messages = (error.schema as { errorMessage?: ErrorMessage }).errorMessage;
  const objectMessage = (keyword: keyof ObjectMessages) => (typeof messages === 'object' ? messages[keyword] : undefined) ?? error.message;
  const message = typeof messages === 'string' ? messages : error.message;
  const { parent, key } = splitPointer(error.path);
  switch (error.type) {
    case ValueErrorType.Object:
      return { keyword: 'type', instancePath: error.path, schemaPath: '', params: { type: 'object' }, message: objectMessage('type') };
    case ValueErrorType.ObjectMinProperties:
      return { keyword: 'minProperties', instancePath: error.path, schemaPath: '', params: {}, message: objectMessage('minProperties') };
    case ValueErrorType.ObjectAdditionalProperties:
      return {
        keyword: 'additionalProperties',
        instancePath: parent,
        schemaPath: '',
        params: { additionalProperty: key },
        message: objectMessage('additionalProperties').replace('{field}', key),
      };
    case ValueErrorType.ObjectRequiredProperty:
      // The error's schema is the missing field's: its message says what the field must be.
      return { keyword: 'required', instancePath: parent, schemaPath: '', params: { missingProperty: key }, message };
    default:
      return { keyword: ValueErrorType[error.type] ?? 'invalid', instancePath: error.path, schemaPath: '', params: {}, message };
  }
}

/**
 * Compiles a body schema with TypeBox's compiler, not with the app's Ajv: that one, with fastify's
 * defaults, coerces types ("5" to 5, null to false) and drops unknown fields, where the admin API
 * refuses both. A refused body yields its first error only, the one the caller is told about.
 */
const compileBodyValidator: FastifySchemaCompiler<TSchema> = ({ schema }) => {
  const compiled = TypeCompiler.Compile(schema);
  return (value: unknown) => {
    if (compiled.Check(value)) return true;
    const first = compiled.Errors(value).First();
    return { error: first ? [validationError(first)] : [] };
  };
};

/** A JSON pointer as a param: '/limits/tokens_per_minute' is 'limits.tokens_per_minute', '' none. */
function paramOf(pointer: string): string | null {
  if (pointer === '') return null;
  return pointer.slice(1).split('/').map(unescapePointerSegment).join('.');
}

/**
 * The answer to a body that breaks its schema, from its first validation error: a value that is no
 * JSON object where one belongs is `invalid_json`, an unknown field `unknown_parameter` with the
 * field as its param, anything else `invalid_value` with the value's path as its param.
 */
function refusal(errors: FastifySchemaValidationError[]): RequestError {
  const error = errors[0];
  if (!error) return invalid(null, NOT_AN_OBJECT, 'invalid_json');
  const message = error.message ?? NOT_AN_OBJECT;
  switch (error.keyword) {
    case 'type':
      if (error.params.type === 'object') return invalid(null, message, 'invalid_json');
      break;
    case 'additionalProperties':
      return invalid(String(error.params.additionalProperty), message, 'unknown_parameter');
    case 'minProperties':
      return invalid(null, message);
    case 'required': {
      const parent = paramOf(error.instancePath);
      const field = String(error.params.missingProperty);
      return invalid(parent === null ? field : `${parent}.${field}`, message);
    }
  }
  return invalid(paramOf(error.instancePath), message);
}

/** A create or update request's body left out (or sent as JSON null) is an empty object. */
async function absentBodyIsEmpty(request: FastifyRequest): Promise<void> {
  request.body ??= {};
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

/** Registers /admin/v1/keys when an admin token is configured. */
export function registerAdminKeys(app: FastifyInstance, deps: EdgeDependencies): void {
  const token = deps.config.EDGE_ADMIN_TOKEN;
  if (!token) return;
  const options = (requestId: string) => ({ deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId });

  void app.register(async (admin) => {
    admin.addHook('onRequest', adminTokenHook(token));
    admin.setValidatorCompiler(compileBodyValidator);
    admin.setSchemaErrorFormatter(refusal);

    admin.post<{ Body: CreateKeyBody }>(
      '/admin/v1/keys',
      { schema: { body: CreateKeyBodySchema }, preValidation: absentBodyIsEmpty },
      async (request, reply) => {
        const body = request.body;
        const create: CreateKeyRequest = { plan: PLANS[body.plan] };
        if (body.name !== undefined) create.name = body.name;
        if (body.routing_policy !== undefined) create.routing_policy = body.routing_policy ?? '';
        if (body.catalog_fallbacks !== undefined) create.catalog_fallbacks_override = body.catalog_fallbacks;
        if (body.limits !== undefined) {
          create.requests_per_minute_override = minuteLimit(body.limits.requests_per_minute);
          create.tokens_per_minute_override = minuteLimit(body.limits.tokens_per_minute);
        }
        if (body.budgets !== undefined) {
          create.daily_budget_override = budget(body.budgets.daily_usd);
          create.monthly_budget_override = budget(body.budgets.monthly_usd);
        }
        const created = await callUnary<CreateKeyRequest, CreateKeyResponseOutput>(deps.auth, deps.auth.CreateKey, create, options(request.id));
        void reply.status(201);
        return { ...adminKeyJson(created.key!), secret: created.secret };
      },
    );

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

    admin.patch<{ Params: { id: string }; Body: UpdateKeyBody }>(
      '/admin/v1/keys/:id',
      { schema: { body: UpdateKeyBodySchema }, preValidation: absentBodyIsEmpty },
      async (request) => {
        const body = request.body;
        const update: UpdateKeyRequest = { key_id: request.params.id };
        if (body.plan !== undefined) update.plan = PLANS[body.plan];
        if (body.name !== undefined) update.name = body.name;
        if (body.routing_policy !== undefined) update.routing_policy = body.routing_policy ?? '';
        if (body.catalog_fallbacks === null) update.catalog_fallbacks_plan_default = true;
        else if (body.catalog_fallbacks !== undefined) update.catalog_fallbacks_override = body.catalog_fallbacks;
        if (body.limits !== undefined) {
          update.requests_per_minute_override = minuteLimit(body.limits.requests_per_minute);
          update.tokens_per_minute_override = minuteLimit(body.limits.tokens_per_minute);
        }
        if (body.budgets !== undefined) {
          update.daily_budget_override = budget(body.budgets.daily_usd);
          update.monthly_budget_override = budget(body.budgets.monthly_usd);
        }
        const key = await callUnary<UpdateKeyRequest, KeyInfoOutput>(deps.auth, deps.auth.UpdateKey, update, options(request.id));
        return adminKeyJson(key);
      },
    );
  });
}
