import { readFileSync } from 'node:fs';
import type { RedisClient } from '@gateway/redis';

/** A Lua script run as an ioredis custom command. */
export interface LuaScript {
  /** The command's name on the client. */
  name: string;
  /** How many of its arguments are keys (ioredis routes the call by them on a cluster). */
  numberOfKeys: number;
  lua: string;
}

/**
 * A script from `.lua` files beside this module, joined in order (libraries of `lib/` first).
 * They are read relative to the module itself: src/scripts when run from source, dist/scripts
 * once built (the package's build copies them there, and the Docker image keeps dist/).
 */
export function luaScript(name: string, numberOfKeys: number, files: readonly string[]): LuaScript {
  const lua = files.map((file) => readFileSync(new URL(`./${file}`, import.meta.url), 'utf8')).join('\n');
  return { name, numberOfKeys, lua };
}

type ScriptCommand = (...keysAndArgs: string[]) => Promise<unknown>;

/**
 * Runs a script: defined on the client at first use (ioredis sends EVALSHA, and EVAL once when the
 * server does not have it yet; on a cluster, to the node of its keys, which share one hash tag).
 */
export function runScript(redis: RedisClient, script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
  if (keys.length !== script.numberOfKeys) throw new Error(`${script.name} takes ${script.numberOfKeys} keys, not ${keys.length}`);
  if (!(script.name in redis)) redis.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
  const command = (redis as unknown as Record<string, ScriptCommand>)[script.name]!;
  return command.call(redis, ...keys, ...args);
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
