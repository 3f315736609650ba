/**
 * How the admin and usage APIs check what a request sends against its TypeBox schema, and answer
 * a request that breaks it. The messages live on the schemas (admin-api-schemas.ts) as ajv-errors'
 * `errorMessage`; this file turns the first error into the OpenAI envelope's code and param.
 */
import { Ajv, type ErrorObject } from 'ajv';
import ajvErrorsModule from 'ajv-errors';
import type { FastifySchema, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { edgeError } from '../../error-codes.js';
import type { RequestError } from '../../errors.js';
import { NOT_AN_OBJECT } from './admin-api-schemas.js';

// A CommonJS module: its default import is module.exports, whose `default` is the plugin.
const ajvErrors = ajvErrorsModule.default;

/**
 * An Ajv of its own, not fastify's: that one coerces types ("5" to 5, null to false) and drops
 * unknown fields, where these APIs refuse both. allErrors is what ajv-errors needs to gather a
 * node's errors under its message; the first error is still the one the caller is told about.
 */
const ajv = ajvErrors(new Ajv({ allErrors: true, strict: true, strictTypes: false }));

/** Compiles a route's body or query string schema. */
export const compileSchemaValidator: FastifySchemaCompiler<FastifySchema> = ({ schema }) => ajv.compile(schema);

/** A JSON pointer as a param: '/limits/tokens_per_minute' is 'limits.tokens_per_minute', '' none. */
function paramOf(pointer: string): string | null {
  if (pointer === '') return null;
  return pointer
    .slice(1)
    .split('/')
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
    .join('.');
}

/**
 * The answer to a request that breaks its schema, from its first error (an ajv-errors message
 * wrapping the errors it replaced): a value that is no JSON object where one belongs is
 * `invalid_json`, an unknown field `unknown_parameter` with the field as its param, a missing query
 * parameter `missing_required_parameter`, anything else `invalid_value` with the value's path as
 * its param.
 */
export function schemaRefusal(errors: FastifySchemaValidationError[], part: string): RequestError {
  const error = errors[0];
  if (!error) return edgeError('invalid_json', NOT_AN_OBJECT);
  const cause = (error.params.errors as ErrorObject[] | undefined)?.[0] ?? error;
  const message = error.message ?? NOT_AN_OBJECT;
  switch (cause.keyword) {
    case 'type':
      if (cause.params.type === 'object') return edgeError('invalid_json', message);
      break;
    case 'additionalProperties': {
      const field = String(cause.params.additionalProperty);
      return edgeError('unknown_parameter', message.replace('{field}', field), { param: field });
    }
    case 'required': {
      const param = paramOf(`${cause.instancePath}/${String(cause.params.missingProperty).replaceAll('~', '~0').replaceAll('/', '~1')}`);
      if (part === 'querystring') return edgeError('missing_required_parameter', message, { param });
      return edgeError('invalid_value', message, { param });
    }
  }
  return edgeError('invalid_value', message, { param: paramOf(error.instancePath) });
}
