/**
 * What the wires that translate another API's body into a chat body (the Responses and Messages
 * APIs) share: reading the JSON they are given, and naming the caller's own field in a 400 the chat
 * parser raised about the field it was translated into.
 */
import { invalid, RequestError } from '../request-error.js';

export type Json = unknown;
export type JsonObject = Record<string, Json>;

/** A chat field and the field of the caller's API it came from (`messages[2]` -> `input[3]`). */
export type FieldSource = readonly [chatParam: string, callerParam: string];

/** Whether a value is a JSON object (not an array, not null). */
export function isObject(value: Json): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What a value is, as an error message says it. */
export function kindOf(value: Json): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** A 400 for a field of the wrong type. */
export function wrongType(param: string, expected: string, value: Json): RequestError {
  return invalid(param, `Invalid type for '${param}': expected ${expected}, but got ${kindOf(value)}.`, 'invalid_type');
}

/** Whether a field was given (neither absent nor null). */
export function given(value: Json): boolean {
  return value !== undefined && value !== null;
}

/**
 * A chat parser's 400 about a field, renamed to the caller's field it came from: the longest chat
 * prefix among the request's own sources and the API's renamed top-level fields; as it was when
 * none matches.
 */
export function renamedError(error: RequestError, sources: readonly FieldSource[], renamedFields: readonly FieldSource[]): RequestError {
  const param = error.param;
  if (param === null) return error;
  const matches = (prefix: string) => param === prefix || param.startsWith(`${prefix}.`) || param.startsWith(`${prefix}[`);
  const best = [...sources, ...renamedFields].filter(([prefix]) => matches(prefix)).sort((a, b) => b[0].length - a[0].length)[0];
  if (!best) return error;
  const callerParam = best[1] + param.slice(best[0].length);
  return new RequestError(error.status, error.message.replaceAll(param, callerParam), {
    type: error.type,
    code: error.code,
    param: callerParam,
    headers: { ...error.headers },
  });
}
