/**
 * What the admin API's schemas share (admin-api-schemas.ts is their index): the steps an object is
 * checked in, the shapes of names, limits, budgets, allow-lists and query parameters, and the
 * envelope of a list.
 */
import { MAX_ALLOW_LIST_ENTRIES, MAX_ALLOW_LIST_ENTRY_LENGTH } from '@gateway/catalog';
import { type Static, type TOptional, type TProperties, type TSchema, Type } from '@sinclair/typebox';

/** The message of a body, or of its `limits` or `budgets`, that is not a JSON object. */
export const NOT_AN_OBJECT = 'The request body must be a JSON object.';

/** The per-minute limits of a body's `limits`, and the budgets of its `budgets`. */
export const LIMIT_FIELDS = ['requests_per_minute', 'tokens_per_minute'] as const;
export const BUDGET_FIELDS = ['daily_usd', 'monthly_usd'] as const;
/** An object holding only `fields`, whatever their values; `emptyMessage` refuses an empty one. */
export function fieldNames(fields: readonly string[], emptyMessage?: string) {
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
export function steps<Schemas extends TSchema[]>(...schemas: [...Schemas]) {
  return Type.Intersect(schemas, { errorMessage: { type: NOT_AN_OBJECT } });
}

/** `limits` or `budgets`: an object of only `fields`, each optional and valued by `schemaOf(field)`. */
export function fieldsObject<Field extends string, Value extends TSchema>(fields: readonly Field[], schemaOf: (field: Field) => Value) {
  const properties = Object.fromEntries(fields.map((field) => [field, Type.Optional(schemaOf(field)) as TOptional<Value>])) as {
    [Name in Field]: TOptional<Value>;
  };
  return steps(fieldNames(fields), Type.Object(properties));
}

/** A key's or an admin token's name. */
export const NameSchema = Type.String({ maxLength: 200, errorMessage: "'name' must be a string of at most 200 characters." });

/**
 * A model allow-list (ids and `prefix*` patterns, @gateway/catalog's rules), or null for every
 * model: in a creation too, where it means the same as leaving it out.
 */
export const AllowedModelsSchema = Type.Union(
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
export const AllowedMcpToolsSchema = Type.Union(
  [
    Type.Array(Type.String({ minLength: 1, maxLength: MAX_ALLOW_LIST_ENTRY_LENGTH, pattern: '^[^\\s*]*\\*?$' }), { maxItems: MAX_ALLOW_LIST_ENTRIES }),
    Type.Null(),
  ],
  {
    errorMessage: `'allowed_mcp_tools' must be a list of at most ${MAX_ALLOW_LIST_ENTRIES} MCP tool names ("<server>__<tool>"), server names or "prefix*" patterns (each 1 to ${MAX_ALLOW_LIST_ENTRY_LENGTH} characters, no whitespace, "*" only as the last character), or null for every tool.`,
  },
);

/** A per-minute count, and the word for no limit. */
export const PerMinute = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
export const Unlimited = Type.Literal('unlimited');

/**
 * The USD amounts whose micro-dollars (`Math.round(usd * 1e6)`, what auth stores) are at least 1
 * and a safe integer: exactly the doubles from 5e-7 to 9007199254.74099, since multiplying and
 * rounding never reverse an order (the bounds were found by stepping across them; tests pin both).
 */
export const Usd = Type.Number({ minimum: 5e-7, maximum: 9007199254.74099 });

/** A per-minute limit: a count, or no limit at all. */
export const LimitSchema = Type.Union([PerMinute, Unlimited]);
export type Limit = Static<typeof LimitSchema>;
/** A budget in USD, or none. */
export const BudgetSchema = Type.Union([Usd, Unlimited]);
export type Budget = Static<typeof BudgetSchema>;

/** `schema`, or null. */
export const Nullable = <Schema extends TSchema>(schema: Schema) => Type.Union([schema, Type.Null()]);

/** An object the admin API answers with: its kind in `object`, its id, then its `properties`. */
export function adminObject<Kind extends string, Properties extends TProperties>(kind: Kind, properties: Properties) {
  return Type.Object({ object: Type.Literal(kind), id: Type.String(), ...properties });
}

/** A query string holding only `names`. */
export function queryNames(names: readonly string[]) {
  const properties = Object.fromEntries(names.map((name) => [name, Type.Optional(Type.Unknown())]));
  return Type.Object(properties, {
    additionalProperties: false,
    errorMessage: { additionalProperties: `Unknown query parameter '{field}'. Allowed: ${names.join(', ')}.` },
  });
}

/** A query parameter given once (a repeated one arrives as an array) and matching `pattern`. */
export function queryParameter(name: string, pattern: string, message: string) {
  return Type.String({ pattern, errorMessage: { type: `'${name}' must be given once.`, pattern: message } });
}

/** Query parameters of a time, a key id and a team id. */
export const UnixSeconds = (name: string) => queryParameter(name, '^[0-9]{1,12}$', `'${name}' must be a time in Unix seconds (a non-negative integer).`);
export const KeyIdParameter = queryParameter('key_id', '^key_[A-Za-z0-9]{16}$', "'key_id' must be a key id (key_ and 16 letters or digits).");
export const TeamIdParameter = queryParameter('team_id', '^team_[A-Za-z0-9]{16}$', "'team_id' must be a team id (team_ and 16 letters or digits).");

/** A list answer. */
export interface List<T> {
  object: 'list';
  data: T[];
}
