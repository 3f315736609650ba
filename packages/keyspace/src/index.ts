/**
 * The one owner of the gateway's Redis keyspace: every key name (keys.ts), the Lua scripts that
 * touch them (scripts/*.lua, each with the module that calls it and decodes its reply into a typed
 * object), the quota window's and the spend's rules they apply, and the move from the earlier
 * layout (migrations/). auth and metering use these and never spell a key or a script themselves;
 * docs/keyspace.md is the map.
 */
export * from './budget-holds.js';
export * from './buckets.js';
export * from './keys.js';
export * from './spend.js';
export * from './window.js';
export * from './scripts/check-quota.js';
export { loadScripts, SCRIPTS } from './scripts/registry.js';
export { type LuaScript, runScript } from './scripts/script.js';
export * from './scripts/key-record.js';
export * from './scripts/record-usage.js';
export * from './scripts/settle-quota.js';
export * as v1ToV2 from './migrations/v1-to-v2.js';
export * from './scripts/model-allow-list.js';
export * from './scripts/response-store.js';
export * from './audit-log.js';
