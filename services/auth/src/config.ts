import { loadConfig, Type, type Static } from '@gateway/config';
import { REDIS_URL_PATTERN } from '@gateway/redis';
import { DEFAULT_PLANS_PATH, PLAN_NAMES, type PlanName } from './plans.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

/** Every environment variable of the auth service; .env.example documents each. */
export const AuthConfigSchema = Type.Object({
  AUTH_LISTEN_ADDR: Type.String({ default: '0.0.0.0:50051' }),
  AUTH_METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9101 }),
  REDIS_URL: Type.String({ pattern: REDIS_URL_PATTERN, default: 'redis://127.0.0.1:6379' }),
  /** Redis replicas that must have a write before it counts as done (WAIT): 0 for none, 1 on a cluster with replicas. */
  REDIS_WAIT_REPLICAS: Type.Integer({ minimum: 0, maximum: 5, default: 0 }),
  // Prefix of every Redis key auth writes, so environments can share one Redis.
  AUTH_REDIS_PREFIX: Type.String({ pattern: '^[A-Za-z0-9:_-]*$', default: 'auth:' }),
  /** The quota window's length: a key's requests and tokens per minute count over this many seconds. */
  AUTH_QUOTA_WINDOW_SECONDS: Type.Integer({ minimum: 1, maximum: 3_600, default: 60 }),
  AUTH_PLANS_PATH: Type.String({ minLength: 1, default: DEFAULT_PLANS_PATH }),
  LOG_LEVEL: Type.Unsafe<LogLevel>({ type: 'string', enum: LOG_LEVELS, default: 'info' }),
  // Empty means none, so an .env file can list the variable without setting it.
  GATEWAY_BOOTSTRAP_KEY: Type.String({ pattern: '^(br-[A-Za-z0-9]{32,})?$', default: '' }),
  GATEWAY_BOOTSTRAP_PLAN: Type.Unsafe<PlanName>({ type: 'string', enum: PLAN_NAMES, default: 'starter' }),
  AUTH_SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, default: 5_000 }),
});

/** The auth service's configuration, frozen. */
export type AuthConfig = Readonly<Static<typeof AuthConfigSchema>>;

/** Parses the environment; throws a ConfigError naming each bad variable. */
export function loadAuthConfig(env: Record<string, string | undefined>): AuthConfig {
  return loadConfig(AuthConfigSchema, env);
}
