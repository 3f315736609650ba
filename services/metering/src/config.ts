import { DEFAULT_CATALOG_PATH } from '@gateway/catalog';
import { loadConfig, Type, type Static } from '@gateway/config';
import { REDIS_URL_PATTERN } from '@gateway/redis';
import { USAGE_STREAM_NAME_PATTERN } from '@gateway/messaging';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

/** Every environment variable of the metering service; .env.example documents each. */
export const MeteringConfigSchema = Type.Object({
  METERING_LISTEN_ADDR: Type.String({ default: '0.0.0.0:50054' }),
  METERING_METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9104 }),
  NATS_URL: Type.String({ pattern: '^(nats|tls)://', default: 'nats://127.0.0.1:4222' }),
  REDIS_URL: Type.String({ pattern: REDIS_URL_PATTERN, default: 'redis://127.0.0.1:6379' }),
  /** Redis replicas that must have a write before it counts as done (WAIT): 0 for none, 1 on a cluster with replicas. */
  REDIS_WAIT_REPLICAS: Type.Integer({ minimum: 0, maximum: 5, default: 0 }),
  CATALOG_PATH: Type.String({ minLength: 1, default: DEFAULT_CATALOG_PATH }),
  LOG_LEVEL: Type.Unsafe<LogLevel>({ type: 'string', enum: LOG_LEVELS, default: 'info' }),
  METERING_SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, default: 5_000 }),
  USAGE_STREAM: Type.String({ pattern: USAGE_STREAM_NAME_PATTERN, default: 'USAGE' }),
  /** Copies JetStream keeps of every usage event: 1 on one NATS server, 3 on a cluster. The edges' must match. */
  USAGE_STREAM_REPLICAS: Type.Integer({ minimum: 1, maximum: 5, default: 1 }),
  METERING_DEDUP_RETENTION_MS: Type.Integer({ minimum: 0, default: 600_000 }),
});

/** The metering service's configuration, frozen. */
export type MeteringConfig = Readonly<Static<typeof MeteringConfigSchema>>;

/** Parses the environment; throws a ConfigError naming each bad variable. */
export function loadMeteringConfig(env: Record<string, string | undefined>): MeteringConfig {
  return loadConfig(MeteringConfigSchema, env);
}
