import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RedisClient } from '@gateway/redis';

/** A Lua script, run by its SHA-1 (EVALSHA) and sent whole (EVAL) only to a server that lacks it. */
export interface LuaScript {
  /** Its name in errors and docs. */
  name: string;
  /** How many of its arguments are keys (ioredis routes the call by them on a cluster). */
  numberOfKeys: number;
  lua: string;
  /** The SHA-1 of lua, as Redis names a loaded script. */
  sha: string;
}

/**
 * A script from `.lua` files beside this module, joined in order (libraries of `lib/` first).
 * They are read relative to the module itself: src/scripts when run from source, dist/scripts
 * once built (the package's build copies them there, and the Docker image keeps dist/).
 */
export function luaScript(name: string, numberOfKeys: number, files: readonly string[]): LuaScript {
  const lua = files.map((file) => readFileSync(new URL(`./${file}`, import.meta.url), 'utf8')).join('\n');
  return { name, numberOfKeys, lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/** Whether Redis refused an EVALSHA because it does not have the script. */
function missingScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Runs a script: EVALSHA, then EVAL when the server answers NOSCRIPT (a restart, a failover, a
 * SCRIPT FLUSH), inside the one promise it returns; on a cluster, to the node of its keys, which
 * share one hash tag. Only the built-in EVALSHA and EVAL are sent: nothing is defined on the
 * client, so a script's first use cannot race the client's auto-pipelining (a pipeline formed
 * before a command was defined on the client lacks it, and ioredis then throws outside any
 * promise). Every failure, a wrong count of keys included, is a rejection.
 */
export async function runScript(redis: RedisClient, script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
  if (keys.length !== script.numberOfKeys) throw new Error(`${script.name} takes ${script.numberOfKeys} keys, not ${keys.length}`);
  try {
    return await redis.evalsha(script.sha, script.numberOfKeys, ...keys, ...args);
  } catch (error) {
    if (!missingScript(error)) throw error;
    return redis.eval(script.lua, script.numberOfKeys, ...keys, ...args);
  }
}

/** Arguments by name, as the scripts read them (lib/arguments.lua): name, value, name, value, ... */
export function namedArguments(values: Readonly<Record<string, string | number>>): string[] {
  return Object.entries(values).flatMap(([name, value]) => [name, String(value)]);
}

/** A script's reply of name/value pairs as a record; Lua numbers arrive as integers. */
export function namedReply(reply: unknown): Record<string, string | number> {
  const flat = Array.isArray(reply) ? (reply as Array<string | number>) : [];
  const named: Record<string, string | number> = {};
  for (let index = 0; index + 1 < flat.length; index += 2) named[String(flat[index])] = flat[index + 1]!;
  return named;
}

/** A field of a named reply as a number (0 when absent). */
export function numberField(reply: Record<string, string | number>, name: string): number {
  return Number(reply[name] ?? 0);
}

/** A field of a named reply that must be one of `values`; throws on anything else (a script out of step). */
export function oneOf<T extends string>(reply: Record<string, string | number>, name: string, values: readonly T[]): T {
  const value = String(reply[name]);
  if (!(values as readonly string[]).includes(value)) throw new Error(`unexpected ${name} "${value}" in a script's reply`);
  return value as T;
}
