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
  LOG_LEVEL: Type.Union(
    [
      Type.Literal('trace'),
      Type.Literal('debug'),
      Type.Literal('info'),
      Type.Literal('warn'),
      Type.Literal('error'),
      Type.Literal('fatal'),
      Type.Literal('silent'),
    ],
    { default: 'info' },
  ),
  EXECUTOR_SHUTDOWN_GRACE_MS: Type.Integer({ default: 10_000, minimum: 0 }),
  UPSTREAM_CONNECT_TIMEOUT_MS: Type.Integer({ default: 5_000, minimum: 1 }),
  UPSTREAM_FIRST_BYTE_TIMEOUT_MS: Type.Integer({ default: 60_000, minimum: 1 }),
  UPSTREAM_IDLE_TIMEOUT_MS: Type.Integer({ default: 60_000, minimum: 1 }),
  /** Connections per upstream origin, each carrying one request at a time (HTTP/1.1): the cap on concurrent calls to one provider. */
  UPSTREAM_MAX_CONNECTIONS: Type.Integer({ default: 1_024, minimum: 1 }),
  /** NATS, where deployment health is published for the router (the executor serves without it). */
  NATS_URL: Type.String({ default: 'nats://127.0.0.1:4222', minLength: 1 }),
  DEPLOYMENT_HEALTH_SUBJECT: Type.String({ default: 'health.v1.deployment', minLength: 1 }),
  EXECUTOR_HEALTH_INTERVAL_MS: Type.Integer({ default: 2_000, minimum: 100 }),
  EXECUTOR_RETRY_MAX_ATTEMPTS: Type.Integer({ default: 3, minimum: 1, maximum: 10 }),
  EXECUTOR_RETRY_BASE_DELAY_MS: Type.Integer({ default: 100, minimum: 0 }),
  EXECUTOR_RETRY_MAX_DELAY_MS: Type.Integer({ default: 2_000, minimum: 0 }),
  EXECUTOR_BREAKER_CONSECUTIVE_FAILURES: Type.Integer({ default: 5, minimum: 1 }),
  EXECUTOR_BREAKER_ERROR_RATE: Type.Number({ default: 0.5, exclusiveMinimum: 0, exclusiveMaximum: 1 }),
  EXECUTOR_BREAKER_WINDOW: Type.Integer({ default: 20, minimum: 1 }),
  EXECUTOR_BREAKER_MINIMUM_CALLS: Type.Integer({ default: 10, minimum: 1 }),
  EXECUTOR_BREAKER_OPEN_MS: Type.Integer({ default: 5_000, minimum: 1 }),
  EXECUTOR_BREAKER_MAX_OPEN_MS: Type.Integer({ default: 60_000, minimum: 1 }),
});

/** The parsed, frozen configuration. */
export type ExecutorConfig = Readonly<Static<typeof ExecutorConfigSchema>>;

/** Parses the environment; throws a ConfigError naming each bad variable. */
export function loadExecutorConfig(environment: Record<string, string | undefined>): ExecutorConfig {
  return loadConfig(ExecutorConfigSchema, environment);
}
