import type { RedisClient } from '@gateway/redis';
import { SCRIPTS } from './registry.js';
import { runScript } from './script.js';

/**
 * Runs the quota script's allow-list matcher (scripts/lib/model-allow-list.lua) on its own: whether
 * every list allows the model. For tests that hold it to the TypeScript matcher's cases; requests
 * meet it inside the quota script.
 */
export async function luaModelAllowed(redis: RedisClient, lists: readonly (readonly string[])[], model: string): Promise<boolean> {
  // cjson decodes '[]' to an empty table, so an empty list stays a list that allows nothing.
  const reply = await runScript(redis, SCRIPTS.modelAllowed, [], [JSON.stringify(lists), model]);
  return reply === 1;
}
