/**
 * The admin API's contract, declared once, one file a resource in schemas/ behind this index: the
 * TypeBox schemas of its request bodies and query strings, which the routes validate with
 * (routes/admin/admin-keys.ts, routes/api/usage.ts), and of its answers, whose static types the
 * routes build and the web console reads (console/src/admin-api.ts imports the types only, so the
 * console bundles no TypeBox). What the schemas share (steps, limits, query parameters) is
 * schemas/common.ts.
 *
 * A schema node that a request can break carries the message it answers with as `errorMessage`
 * (ajv-errors): one message for any failure of a value, or one per keyword of an object. An object
 * is checked in steps (an `allOf`), each complete before the next, so that the first error is the
 * first fault a reader would name: unknown field names, then a missing required field, then the
 * values in the order of the fields. `{field}` in a message stands for the unknown field's name.
 */
export { type Budget, BudgetSchema, type Limit, LimitSchema, type List, NOT_AN_OBJECT } from './schemas/common.js';
export * from './schemas/admin-tokens.js';
export * from './schemas/audit.js';
export * from './schemas/keys.js';
export * from './schemas/mcp-servers.js';
export * from './schemas/models.js';
export * from './schemas/policies.js';
export * from './schemas/requests.js';
export * from './schemas/teams.js';
export * from './schemas/tool-calls.js';
export * from './schemas/usage.js';
export * from './schemas/cache.js';
