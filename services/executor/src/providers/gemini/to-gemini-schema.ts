/**
 * JSON Schema (as OpenAI callers write tool parameters and json_schema formats) -> the OpenAPI 3.0
 * subset Gemini accepts (its `Schema` message). Gemini answers 400 to a keyword it does not know,
 * so everything outside the subset is dropped: additionalProperties, $schema, $id, $defs,
 * exclusiveMinimum, multipleOf, patternProperties, not, if/then/else, ... Local `$ref`s are
 * inlined; `const` becomes a one-value enum; `["string", "null"]` becomes `STRING` + nullable;
 * `oneOf` becomes `anyOf`; only the formats Gemini documents are kept.
 */
import type { GeminiSchema } from './wire-types.js';

/** A schema Gemini's subset cannot express (a recursive `$ref`, a remote `$ref`). */
export class UnconvertibleSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnconvertibleSchemaError';
  }
}

type JsonSchema = Record<string, unknown>;

const TYPES: Readonly<Record<string, GeminiSchema['type']>> = {
  string: 'STRING',
  number: 'NUMBER',
  integer: 'INTEGER',
  boolean: 'BOOLEAN',
  array: 'ARRAY',
  object: 'OBJECT',
  null: 'NULL',
};

/** The formats Gemini documents, per type; any other format is a 400 there. */
const FORMATS: Readonly<Partial<Record<NonNullable<GeminiSchema['type']>, ReadonlySet<string>>>> = {
  STRING: new Set(['enum', 'date-time']),
  NUMBER: new Set(['float', 'double']),
  INTEGER: new Set(['int32', 'int64']),
};

/** Keywords copied as they are. */
const COPIED = [
  'title',
  'description',
  'pattern',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'minProperties',
  'maxProperties',
  'default',
  'example',
  'propertyOrdering',
] as const;

/** Deeper than this, a schema is taken to be recursive through `$ref`. */
const MAX_DEPTH = 32;

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function resolveReference(reference: string, root: JsonSchema): JsonSchema {
  if (reference !== '#' && !reference.startsWith('#/')) throw new UnconvertibleSchemaError(`$ref ${reference} is not a local reference`);
  let target: unknown = root;
  for (const segment of reference === '#' ? [] : reference.slice(2).split('/')) {
    const key = decodeURIComponent(segment).replace(/~1/g, '/').replace(/~0/g, '~');
    target = isSchema(target) ? target[key] : undefined;
  }
  if (!isSchema(target)) throw new UnconvertibleSchemaError(`$ref ${reference} does not point at a schema`);
  return target;
}

/** Merges the members of an allOf into one schema (properties and required are unioned). */
function mergeAllOf(schema: JsonSchema, root: JsonSchema, depth: number): JsonSchema {
  const { allOf, ...rest } = schema;
  const merged: JsonSchema = { ...rest };
  for (const member of Array.isArray(allOf) ? allOf : []) {
    if (!isSchema(member)) continue;
    const resolved = typeof member.$ref === 'string' ? resolveReference(member.$ref, root) : member;
    const flat = Array.isArray(resolved.allOf) ? mergeAllOf(resolved, root, depth + 1) : resolved;
    for (const [key, value] of Object.entries(flat)) {
      if (key === 'properties' && isSchema(value)) merged.properties = { ...(isSchema(merged.properties) ? merged.properties : {}), ...value };
      else if (key === 'required' && Array.isArray(value))
        merged.required = [...new Set([...(Array.isArray(merged.required) ? merged.required : []), ...value])];
      else if (!(key in merged)) merged[key] = value;
    }
  }
  return merged;
}

function convert(input: unknown, root: JsonSchema, depth: number): GeminiSchema {
  if (depth > MAX_DEPTH) throw new UnconvertibleSchemaError('the schema is recursive');
  if (!isSchema(input)) return {};
  let schema = input;
  if (typeof schema.$ref === 'string') {
    const { $ref, ...siblings } = schema;
    schema = { ...resolveReference($ref, root), ...siblings };
  }
  if (Array.isArray(schema.allOf)) schema = mergeAllOf(schema, root, depth);
  const result: GeminiSchema = {};

  const declared = Array.isArray(schema.type)
    ? schema.type.filter((type): type is string => typeof type === 'string')
    : typeof schema.type === 'string'
      ? [schema.type]
      : [];
  const nonNull = declared.filter((type) => type !== 'null');
  if (declared.includes('null') && nonNull.length > 0) result.nullable = true;
  if (nonNull.length > 1) {
    // ["string", "number"]: one alternative per type, the other keywords on each.
    const { type: _type, ...rest } = schema;
    return { ...(result.nullable ? { nullable: true } : {}), anyOf: nonNull.map((type) => convert({ ...rest, type }, root, depth + 1)) };
  }
  let type = TYPES[nonNull[0] ?? declared[0] ?? ''];
  if (!type) {
    if (isSchema(schema.properties)) type = 'OBJECT';
    else if (schema.items !== undefined) type = 'ARRAY';
    else if (Array.isArray(schema.enum) || schema.const !== undefined) type = 'STRING';
  }
  if (type) result.type = type;

  for (const key of COPIED) if (schema[key] !== undefined) (result as Record<string, unknown>)[key] = schema[key];
  if (typeof schema.format === 'string' && type && FORMATS[type]?.has(schema.format)) result.format = schema.format;
  const values = schema.const !== undefined ? [schema.const] : Array.isArray(schema.enum) ? schema.enum : undefined;
  if (values?.includes(null)) result.nullable = true;
  const nonNullValues = values?.filter((value) => value !== null);
  // Gemini's enum holds strings only; numeric or mixed enums are left to the description.
  if (nonNullValues?.length && nonNullValues.every((value) => typeof value === 'string')) {
    result.enum = nonNullValues as string[];
    if (!type || type === 'STRING') {
      result.type = 'STRING';
      result.format = 'enum';
    }
  }
  if (isSchema(schema.properties)) {
    result.properties = Object.fromEntries(Object.entries(schema.properties).map(([name, property]) => [name, convert(property, root, depth + 1)]));
    if (Array.isArray(schema.required))
      result.required = schema.required.filter((name): name is string => typeof name === 'string' && name in (result.properties as object));
  }
  if (isSchema(schema.items)) result.items = convert(schema.items, root, depth + 1);
  const alternatives = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
  if (alternatives) {
    const converted = alternatives.map((alternative) => convert(alternative, root, depth + 1));
    // {"anyOf": [X, {"type": "null"}]} is how JSON Schema writes "X or null".
    const withoutNull = converted.filter((alternative) => alternative.type !== 'NULL');
    if (withoutNull.length < converted.length) result.nullable = true;
    if (withoutNull.length === 1) Object.assign(result, withoutNull[0], result.nullable ? { nullable: true } : {});
    else result.anyOf = withoutNull;
  }
  return result;
}

/** Converts a JSON Schema; throws UnconvertibleSchemaError for what the subset cannot express. */
export function toGeminiSchema(schema: unknown): GeminiSchema {
  return convert(schema, isSchema(schema) ? schema : {}, 0);
}
