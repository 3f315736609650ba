/**
 * Reads a service's environment once, through a TypeBox schema, into a frozen typed object.
 * Only a service's main.ts calls this, with process.env; nothing else reads the environment.
 */
import { readFileSync } from 'node:fs';
import { envSchema } from 'env-schema';
import type { Static, TObject } from '@sinclair/typebox';

export { Type } from '@sinclair/typebox';
export { type Command, type CommandLineOptions, failureOf, isUsageError, runCommandLine, UsageError } from './command-line.js';
export {
  authPrefixVariable,
  configReloadVariable,
  grpcConnectionAgeVariables,
  logLevelVariable,
  mcpCredentialsVariables,
  redisVariables,
  usageStreamVariables,
} from './shared-variables.js';
export {
  DEFAULT_RELOAD_INTERVAL_MS,
  ReloadableFile,
  type ReloadableFileOptions,
  type ReloadCounter,
  type ReloadListener,
  type ReloadLogger,
  type ReloadOutcome,
} from './reloadable-file.js';
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

/** A service's configuration as its schema declares it, frozen. */
export type ConfigOf<Schema extends TObject> = Readonly<Static<Schema>>;

/** A service's configuration loader: parses the environment against the schema; throws a ConfigError naming each bad variable. */
export function configLoader<Schema extends TObject>(schema: Schema): (env: Record<string, string | undefined>) => ConfigOf<Schema> {
  return (env) => loadConfig(schema, env);
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

/**
 * What a service's two `.env.example` files get wrong about its config schema: its own
 * (`.env.example` in `serviceRoot`, complete but for `readElsewhere`) and the repository's (two
 * folders above), which must name every variable the service reads, `readElsewhere` included.
 * Each problem names its file; empty when both agree.
 */
export function serviceEnvExampleProblems(schema: TObject, serviceRoot: URL, readElsewhere: readonly string[] = []): string[] {
  const own = readFileSync(new URL('.env.example', serviceRoot), 'utf8');
  const all = readFileSync(new URL('../../.env.example', serviceRoot), 'utf8');
  return [
    ...envExampleProblems(schema, own, { complete: true, readElsewhere }).map((problem) => `the service's .env.example: ${problem}`),
    ...envExampleProblems(schema, all).map((problem) => `the repository's .env.example: ${problem}`),
    ...readElsewhere.filter((name) => !all.includes(`${name}=`)).map((name) => `the repository's .env.example: ${name} is read but not listed`),
  ];
}
