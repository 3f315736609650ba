/**
 * The executor's configuration, read once from the environment by main.ts. `.env.example` lists
 * every variable with a comment.
 */
import { DEFAULT_CATALOG_PATH } from '@gateway/catalog';
import { loadConfig, Type, type Static } from '@gateway/config';

/** The schema of the executor's environment, with defaults. */
export const ExecutorConfigSchema = Type.Object({
  EXECUTOR_LISTEN_ADDR: Type.String({ default: '0.0.0.0:50053', minLength: 1 }),
  EXECUTOR_METRICS_PORT: Type.Integer({ default: 9103, minimum: 0, maximum: 65535 }),
  CATALOG_PATH: Type.String({ default: DEFAULT_CATALOG_PATH, minLength: 1 }),
  LOG_LEVEL: Type.Union([Type.Literal('trace'), Type.Literal('debug'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error'), Type.Literal('fatal'), Type.Literal('silent')], { default: 'info' }),
  EXECUTOR_SHUTDOWN_GRACE_MS: Type.Integer({ default: 10_000, minimum: 0 }),
  UPSTREAM_CONNECT_TIMEOUT_MS: Type.Integer({ default: 5_000, minimum: 1 }),
  UPSTREAM_FIRST_BYTE_TIMEOUT_MS: Type.Integer({ default: 60_000, minimum: 1 }),
  UPSTREAM_IDLE_TIMEOUT_MS: Type.Integer({ default: 60_000, minimum: 1 }),
});

/** The parsed, frozen configuration. */
export type ExecutorConfig = Readonly<Static<typeof ExecutorConfigSchema>>;

/** Parses the environment; throws a ConfigError naming each bad variable. */
export function loadExecutorConfig(environment: Record<string, string | undefined>): ExecutorConfig {
  return loadConfig(ExecutorConfigSchema, environment);
}
