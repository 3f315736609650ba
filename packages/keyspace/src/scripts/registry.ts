import type { RedisClient } from '@gateway/redis';
import { masters } from '@gateway/redis';
import { type LuaScript, luaScript } from './script.js';

const CHECK_QUOTA_FILES = ['lib/arguments.lua', 'lib/window.lua', 'lib/spend.lua', 'lib/budget-holds.lua', 'lib/model-allow-list.lua', 'check-quota.lua'];
const RECORD_FILES = ['lib/arguments.lua', 'lib/window.lua', 'lib/budget-holds.lua', 'record-usage.lua'];
const RESPONSE_FILES = ['lib/arguments.lua', 'lib/response-sizes.lua'];
const SETTLE_FILES = ['lib/arguments.lua', 'lib/window.lua', 'lib/budget-holds.lua', 'settle-quota.lua'];

/**
 * Every Lua script the services run, in one place: the modules beside it run them (runScript), and
 * loadScripts loads them all into a Redis before a service takes traffic. A script's variants (a key
 * with or without a team) differ only in how many keys they declare.
 */
export const SCRIPTS = {
  checkQuota: luaScript('gatewayCheckQuota', 7, CHECK_QUOTA_FILES),
  /** The same script for a member of a team: the team's record, window, spend and holds as well. */
  checkTeamQuota: luaScript('gatewayCheckTeamQuota', 14, CHECK_QUOTA_FILES),
  recordUsage: luaScript('gatewayRecordUsage', 13, RECORD_FILES),
  /** The same script for a member of a team: the team's window, spend, totals and holds as well. */
  recordTeamUsage: luaScript('gatewayRecordTeamUsage', 20, RECORD_FILES),
  settleQuota: luaScript('gatewaySettleQuota', 6, SETTLE_FILES),
  /** The same script for a member of a team: the team's window and holds as well. */
  settleTeamQuota: luaScript('gatewaySettleTeamQuota', 12, SETTLE_FILES),
  createKeyRecord: luaScript('gatewayCreateKeyRecord', 1, ['create-key-record.lua']),
  createTeamKeyRecord: luaScript('gatewayCreateTeamKeyRecord', 3, ['create-key-record.lua']),
  updateKeyRecord: luaScript('gatewayUpdateKeyRecord', 1, ['update-key-record.lua']),
  updateTeamKeyRecord: luaScript('gatewayUpdateTeamKeyRecord', 2, ['update-key-record.lua']),
  deleteTeam: luaScript('gatewayDeleteTeam', 6, ['delete-team.lua']),
  /** A stored response kept, and its key kept within its bounds (metering's response store). */
  responsePut: luaScript('gatewayResponsePut', 3, [...RESPONSE_FILES, 'response-put.lua']),
  responseDelete: luaScript('gatewayResponseDelete', 3, [...RESPONSE_FILES, 'response-delete.lua']),
  /** The store's total bound, in a slot of its own. */
  responseTotal: luaScript('gatewayResponseTotal', 2, [...RESPONSE_FILES, 'response-total.lua']),
  /** The decision script's allow-list matcher on its own (for tests that hold it to TypeScript's). */
  modelAllowed: luaScript('gatewayModelAllowed', 0, ['lib/model-allow-list.lua', 'model-allowed.lua']),
} as const satisfies Record<string, LuaScript>;

/**
 * Loads every script into each master (SCRIPT LOAD) once the client is ready, so that the first
 * requests a service takes find them there. Not needed for correctness: runScript sends a script whole when a server lacks
 * it (a master that failed over, a restart, a SCRIPT FLUSH); this only keeps that off the first
 * requests, and a script that does not compile fails the start rather than a request.
 */
export async function loadScripts(redis: RedisClient): Promise<void> {
  if (redis.status !== 'ready') await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
  await Promise.all(masters(redis).flatMap((node) => Object.values(SCRIPTS).map((script) => node.script('LOAD', script.lua))));
}
