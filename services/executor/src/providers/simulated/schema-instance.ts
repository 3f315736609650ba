/**
 * Generates a JSON value that satisfies a JSON Schema, deterministically from a SeededRandom: the
 * simulated model's tool-call arguments and json_schema answers. Covers what tool and
 * structured-output schemas use in practice: type (and type lists), enum, const, properties and
 * required, items / prefixItems, min/max items, minimum / maximum (exclusive too), multipleOf,
 * min/max length, formats date-time, date, time, email, uri, uuid, ipv4, ipv6, hostname, local
 * `$ref`s (`#/$defs/...`, `#/definitions/...`), allOf, anyOf, oneOf. `pattern` is not honoured
 * (it would need a regex inverter).
 *
 * Bounded work: the schema is the caller's, and minItems, minLength and nesting multiply (eight
 * nested arrays of minItems 100 ask for 10^16 values; a required property may refer to its own
 * object). One instance is built from at most MAX_GENERATED_UNITS values and string characters
 * and MAX_NESTING nested values: past either, values are null and strings stop growing, so the
 * instance no longer satisfies such a schema, and the executor stays responsive.
 */
import type { SeededRandom } from './seeded-random.js';

/** A JSON Schema as parsed from JSON; a schema has no fixed shape. */
export type JsonSchema = boolean | { readonly [keyword: string]: unknown };

type SchemaObject = { readonly [keyword: string]: unknown };

const WORDS = [
  'alpha',
  'amber',
  'harbor',
  'meadow',
  'signal',
  'vector',
  'copper',
  'river',
  'summit',
  'lantern',
  'orbit',
  'cedar',
  'pixel',
  'falcon',
  'garden',
  'atlas',
];

/** Nesting beyond this only fills required properties and minimum item counts, so recursion ends. */
const MAX_DEPTH = 6;

/** Values and string characters one instance is built from at most: about 1 MB of JSON. */
const MAX_GENERATED_UNITS = 100_000;

/** Values nested deeper than this (a cycle of `$ref`s through required properties or anyOf) are null. */
const MAX_NESTING = 256;

/** What is left of one instance's budget (see the file header). */
interface Budget {
  units: number;
  nesting: number;
}

/** What one instance is generated with. */
interface Generation {
  readonly random: SeededRandom;
  /** Resolves local `$ref`s. */
  readonly root: JsonSchema | undefined;
  readonly budget: Budget;
}

/** Returns a value valid against the schema; `root` resolves local `$ref`s. */
export function generateSchemaInstance(schema: JsonSchema | undefined, random: SeededRandom, root: JsonSchema | undefined = schema): unknown {
  return generateValue(schema, { random, root, budget: { units: MAX_GENERATED_UNITS, nesting: 0 } }, 0);
}

/** A value of `schema` at `depth`, within what is left of the generation's budget. */
function generateValue(schema: JsonSchema | undefined, generation: Generation, depth: number): unknown {
  const { budget } = generation;
  if (budget.units <= 0 || budget.nesting >= MAX_NESTING) return null;
  budget.units -= 1;
  budget.nesting += 1;
  try {
    return generateWithin(schema, generation, depth);
  } finally {
    budget.nesting -= 1;
  }
}

function generateWithin(schema: JsonSchema | undefined, generation: Generation, depth: number): unknown {
  const { random, root } = generation;
  if (schema === undefined || schema === true) return random.pick(WORDS);
  if (schema === false) return null;
  const resolved = flatten(schema, root, 0);
  if ('const' in resolved) return resolved.const;
  if (Array.isArray(resolved.enum) && resolved.enum.length > 0) return random.pick(resolved.enum);
  if (Array.isArray(resolved.anyOf) && resolved.anyOf.length > 0) {
    return generateValue(mergeSchemas(withoutKeys(resolved, ['anyOf']), random.pick(resolved.anyOf as JsonSchema[]), root), generation, depth);
  }
  if (Array.isArray(resolved.oneOf) && resolved.oneOf.length > 0) {
    // The first branch: picking at random could produce a value that matches two branches.
    return generateValue(mergeSchemas(withoutKeys(resolved, ['oneOf']), resolved.oneOf[0] as JsonSchema, root), generation, depth);
  }
  switch (typeOf(resolved, random)) {
    case 'null':
      return null;
    case 'boolean':
      return random.chance(0.5);
    case 'integer':
      return generateNumber(resolved, random, true);
    case 'number':
      return generateNumber(resolved, random, false);
    case 'array':
      return generateArray(resolved, generation, depth);
    case 'object':
      return generateObject(resolved, generation, depth);
    default:
      return generateString(resolved, random, generation.budget);
  }
}

function isObject(value: unknown): value is SchemaObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function withoutKeys(schema: SchemaObject, keys: string[]): SchemaObject {
  return Object.fromEntries(Object.entries(schema).filter(([key]) => !keys.includes(key)));
}

/** Resolves a `$ref` and folds `allOf` into one schema object. */
function flatten(schema: JsonSchema, root: JsonSchema | undefined, hops: number): SchemaObject {
  if (!isObject(schema)) return {};
  let result: SchemaObject = schema;
  if (typeof result.$ref === 'string' && hops < 32) {
    const target = resolvePointer(root, result.$ref);
    result = { ...flatten(target ?? {}, root, hops + 1), ...withoutKeys(result, ['$ref']) };
  }
  if (Array.isArray(result.allOf)) {
    // One pass over the parts, as folding mergeSchemas over them would give, without copying the
    // properties gathered so far at each part (quadratic in a schema of many parts).
    const merged: { [keyword: string]: unknown } = withoutKeys(result, ['allOf']);
    const properties: { [name: string]: unknown } = { ...(isObject(merged.properties) ? merged.properties : {}) };
    const required: unknown[] = [...(Array.isArray(merged.required) ? merged.required : [])];
    for (const part of result.allOf as JsonSchema[]) {
      const other = flatten(part, root, 0);
      Object.assign(merged, other);
      if (isObject(other.properties)) Object.assign(properties, other.properties);
      if (Array.isArray(other.required)) for (const name of other.required) required.push(name);
    }
    if (Object.keys(properties).length > 0) merged.properties = properties;
    if (required.length > 0) merged.required = required;
    result = merged;
  }
  return result;
}

function mergeSchemas(base: SchemaObject, extra: JsonSchema, root: JsonSchema | undefined): SchemaObject {
  const other = flatten(extra, root, 0);
  const properties = { ...(isObject(base.properties) ? base.properties : {}), ...(isObject(other.properties) ? other.properties : {}) };
  const required = [...(Array.isArray(base.required) ? base.required : []), ...(Array.isArray(other.required) ? other.required : [])];
  return { ...base, ...other, ...(Object.keys(properties).length > 0 ? { properties } : {}), ...(required.length > 0 ? { required } : {}) };
}

function resolvePointer(root: JsonSchema | undefined, reference: string): JsonSchema | undefined {
  if (!reference.startsWith('#')) return undefined;
  let node: unknown = root;
  for (const raw of reference.slice(1).split('/').filter(Boolean)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    node = isObject(node) ? node[key] : undefined;
  }
  return node === undefined ? undefined : (node as JsonSchema);
}

function typeOf(schema: SchemaObject, random: SeededRandom): string {
  const type = schema.type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type) && type.length > 0) {
    const concrete = type.filter((name) => name !== 'null');
    return concrete.length > 0 ? random.pick(concrete as string[]) : 'null';
  }
  if (isObject(schema.properties) || Array.isArray(schema.required)) return 'object';
  if (schema.items !== undefined || schema.prefixItems !== undefined) return 'array';
  if (['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'].some((key) => typeof schema[key] === 'number')) return 'number';
  return 'string';
}

function numberKeyword(schema: SchemaObject, key: string): number | undefined {
  const value = schema[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function generateNumber(schema: SchemaObject, random: SeededRandom, integer: boolean): number {
  const exclusiveMinimum = numberKeyword(schema, 'exclusiveMinimum');
  const exclusiveMaximum = numberKeyword(schema, 'exclusiveMaximum');
  const step = integer ? 1 : 0.01;
  let low = numberKeyword(schema, 'minimum') ?? (exclusiveMinimum !== undefined ? exclusiveMinimum + step : undefined);
  let high = numberKeyword(schema, 'maximum') ?? (exclusiveMaximum !== undefined ? exclusiveMaximum - step : undefined);
  if (low === undefined && high === undefined) {
    low = 0;
    high = 100;
  } else if (low === undefined) low = (high as number) - 100;
  else if (high === undefined) high = low + 100;
  if ((low as number) > (high as number)) high = low;
  const multipleOf = numberKeyword(schema, 'multipleOf');
  if (multipleOf !== undefined && multipleOf > 0) {
    const first = Math.ceil((low as number) / multipleOf);
    const last = Math.floor((high as number) / multipleOf);
    return last >= first ? random.integer(first, last) * multipleOf : first * multipleOf;
  }
  if (integer) {
    const first = Math.ceil(low as number);
    const last = Math.floor(high as number);
    return last >= first ? random.integer(first, last) : first;
  }
  // Two decimals keep the JSON short; clamp so rounding never leaves the range.
  const value = Math.round(((low as number) + random.next() * ((high as number) - (low as number))) * 100) / 100;
  return Math.min(Math.max(value, low as number), high as number);
}

function generateString(schema: SchemaObject, random: SeededRandom, budget: Budget): string {
  const minLength = numberKeyword(schema, 'minLength') ?? 0;
  const maxLength = numberKeyword(schema, 'maxLength');
  const formatted = formatValue(typeof schema.format === 'string' ? schema.format : undefined, random);
  if (formatted !== undefined) return formatted;
  let text = Array.from({ length: random.integer(1, 3) }, () => random.pick(WORDS)).join(' ');
  if (maxLength !== undefined && text.length > maxLength) text = text.slice(0, maxLength).trimEnd();
  const padding = Math.min(minLength - text.length, budget.units);
  if (padding > 0) {
    text += random.characters(padding, 'abcdefghijklmnopqrstuvwxyz');
    budget.units -= padding;
  }
  return text;
}

function two(value: number): string {
  return value.toString().padStart(2, '0');
}

function formatValue(format: string | undefined, random: SeededRandom): string | undefined {
  const date = `${random.integer(2020, 2030)}-${two(random.integer(1, 12))}-${two(random.integer(1, 28))}`;
  const time = `${two(random.integer(0, 23))}:${two(random.integer(0, 59))}:${two(random.integer(0, 59))}`;
  switch (format) {
    case 'date-time':
      return `${date}T${time}Z`;
    case 'date':
      return date;
    case 'time':
      return `${time}Z`;
    case 'email':
      return `${random.pick(WORDS)}@example.com`;
    case 'uri':
    case 'url':
      return `https://example.com/${random.pick(WORDS)}`;
    case 'hostname':
      return `${random.pick(WORDS)}.example.com`;
    case 'ipv4':
      return `192.0.2.${random.integer(1, 254)}`;
    case 'ipv6':
      return `2001:db8::${random.integer(1, 65535).toString(16)}`;
    case 'uuid': {
      const hex = random.characters(32, '0123456789abcdef');
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${random.pick(['8', '9', 'a', 'b'])}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
    }
    default:
      return undefined;
  }
}

function generateArray(schema: SchemaObject, generation: Generation, depth: number): unknown[] {
  const { random, budget } = generation;
  const prefixItems = Array.isArray(schema.prefixItems) ? (schema.prefixItems as JsonSchema[]) : [];
  const minItems = Math.max(numberKeyword(schema, 'minItems') ?? 0, 0);
  const maxItems = numberKeyword(schema, 'maxItems');
  const itemSchema = Array.isArray(schema.items) ? undefined : (schema.items as JsonSchema | undefined);
  const wanted = depth >= MAX_DEPTH ? minItems : random.integer(Math.max(minItems, 1), Math.max(minItems, 1, Math.min(maxItems ?? 3, minItems + 2)));
  const count = Math.min(
    Math.max(wanted, prefixItems.length > 0 ? Math.min(prefixItems.length, maxItems ?? prefixItems.length) : 0),
    maxItems ?? Number.MAX_SAFE_INTEGER,
  );
  const unique = schema.uniqueItems === true;
  const items: unknown[] = [];
  const seen = new Set<string>();
  for (let attempt = 0; items.length < count && attempt < count * 10 && budget.units > 0; attempt += 1) {
    const position = items.length;
    const value = generateValue(position < prefixItems.length ? prefixItems[position] : itemSchema, generation, depth + 1);
    const key = JSON.stringify(value);
    if (unique && seen.has(key)) continue;
    seen.add(key);
    items.push(value);
  }
  return items;
}

function generateObject(schema: SchemaObject, generation: Generation, depth: number): Record<string, unknown> {
  const { random } = generation;
  const properties = isObject(schema.properties) ? (schema.properties as Record<string, JsonSchema>) : {};
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const result: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties)) {
    if (required.has(name) || (depth < MAX_DEPTH && random.chance(0.6))) result[name] = generateValue(property, generation, depth + 1);
  }
  for (const name of required) if (!(name in result)) result[name] = generateValue(undefined, generation, depth + 1);
  return result;
}
