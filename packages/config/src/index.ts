/**
 * Reads a service's environment once, through a TypeBox schema, into a frozen typed object.
 * Only a service's main.ts calls this, with process.env; nothing else reads the environment.
 */
import { envSchema } from 'env-schema';
import type { Static, TObject } from '@sinclair/typebox';

export { Type } from '@sinclair/typebox';
export { redisVariables, usageStreamVariables } from './shared-variables.js';
export { commentLines, type EnvExampleSection, renderEnvExample, undescribedVariables } from './env-example.js';
export type { Static, TObject } from '@sinclair/typebox';

/** Thrown when the environment does not satisfy the schema; the message names each bad variable. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Parses, coerces and validates the environment against the schema, with defaults applied. */
export function loadConfig<Schema extends TObject>(schema: Schema, env: Record<string, string | undefined>): Readonly<Static<Schema>> {
  try {
    const config = envSchema<Static<Schema>>({ schema, data: env, dotenv: false, env: false } as Parameters<typeof envSchema>[0]);
    const known = Object.keys(schema.properties);
    return Object.freeze(Object.fromEntries(Object.entries(config as object).filter(([name]) => known.includes(name)))) as Readonly<Static<Schema>>;
  } catch (error) {
    throw new ConfigError(`invalid configuration: ${(error as Error).message}`);
  }
}

/** The variables a `.env.example` text names: `NAME=value` lines and commented-out `# NAME=value` ones. */
export function envExampleVariables(text: string): Set<string> {
  return new Set([...text.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((match) => match[1]!));
}

/**
 * What a `.env.example` gets wrong about a config schema: each variable the schema reads that the
 * example does not name, and (with `complete`, for a service's own example) each variable the
 * example names that the schema does not read, unless listed in `readElsewhere` (provider keys
 * named by the catalog, say). Empty when the two agree.
 */
export function envExampleProblems(schema: TObject, text: string, options: { complete?: boolean; readElsewhere?: readonly string[] } = {}): string[] {
  const named = envExampleVariables(text);
  const read = Object.keys(schema.properties);
  const problems = read.filter((name) => !named.has(name)).map((name) => `${name} is read but not listed`);
  if (options.complete) {
    const elsewhere = new Set(options.readElsewhere ?? []);
    for (const name of named) if (!read.includes(name) && !elsewhere.has(name)) problems.push(`${name} is listed but not read`);
  }
  return problems;
}
