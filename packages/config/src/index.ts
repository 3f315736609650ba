/**
 * Reads a service's environment once, through a TypeBox schema, into a frozen typed object.
 * Only a service's main.ts calls this, with process.env; nothing else reads the environment.
 */
import { envSchema } from 'env-schema';
import type { Static, TObject } from '@sinclair/typebox';

export { Type } from '@sinclair/typebox';
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
