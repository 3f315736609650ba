import { DEFAULT_CATALOG_PATH } from '@gateway/catalog';
import { loadConfig, Type, type Static } from '@gateway/config';
import { REDIS_URL_PATTERN } from '@gateway/redis';
import { USAGE_STREAM_NAME_PATTERN } from '@gateway/messaging';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

/** Every environment variable of the metering service; .env.example documents each. */
export const MeteringConfigSchema = Type.Object({
  METERING_LISTEN_ADDR: Type.String({
    description: "Address of metering's gRPC server (the UsageService, which the edge reads usage from, and grpc.health.v1).",
    default: '0.0.0.0:50054',
  }),
  METERING_METRICS_PORT: Type.Integer({ description: "Port of metering's /metrics, /healthz and /readyz.", minimum: 0, maximum: 65535, default: 9104 }),
  NATS_URL: Type.String({
    description: 'NATS with JetStream, where the edge publishes usage events.',
    pattern: '^(nats|tls)://',
    default: 'nats://127.0.0.1:4222',
  }),
  REDIS_URL: Type.String({
    description:
      'Redis holding the metered events and totals: redis://host:port, redis-cluster://host:port,host:port,... for a Redis Cluster (rediss:// and rediss-cluster:// with TLS).',
    pattern: REDIS_URL_PATTERN,
    default: 'redis://127.0.0.1:6379',
  }),
  REDIS_WAIT_REPLICAS: Type.Integer({
    description:
      "Redis replicas that must have metered usage and key changes before they count (WAIT; auth and metering): 0 for none, 1 on a cluster with replicas, so that a master's failover loses neither.",
    minimum: 0,
    maximum: 5,
    default: 0,
  }),
  CATALOG_PATH: Type.String({
    description: 'The model catalog (YAML) to price events with; unset = packages/catalog/catalog.yaml.',
    examples: ['/etc/gateway/catalog.yaml'],
    minLength: 1,
    default: DEFAULT_CATALOG_PATH,
  }),
  LOG_LEVEL: Type.Unsafe<LogLevel>({
    description: 'pino log level: fatal, error, warn, info, debug, trace, silent.',
    type: 'string',
    enum: LOG_LEVELS,
    default: 'info',
  }),
  METERING_SHUTDOWN_GRACE_MS: Type.Integer({ description: 'How long shutdown may take to finish the event being metered (ms).', minimum: 0, default: 5_000 }),
  USAGE_STREAM: Type.String({
    description:
      'The JetStream stream of usage events (edge and metering); one per gateway sharing a NATS. The default USAGE uses the subjects usage.v1.*; another name N uses n.usage.v1.* (lower-cased).',
    pattern: USAGE_STREAM_NAME_PATTERN,
    default: 'USAGE',
  }),
  USAGE_STREAM_REPLICAS: Type.Integer({
    description:
      'Servers that keep each usage event (edge and metering, the same on both): 1 on one NATS server, 3 on a NATS cluster, so that an acknowledged event survives the loss of a server and its disk.',
    minimum: 1,
    maximum: 5,
    default: 1,
  }),
  METERING_DEDUP_RETENTION_MS: Type.Integer({
    description:
      "How long an acknowledged event's de-duplication record stays in Redis (ms): catches a copy the edge publishes again after a lost acknowledgement, past the stream's 2-minute duplicate window.",
    minimum: 0,
    default: 600_000,
  }),
});

/** The metering service's configuration, frozen. */
export type MeteringConfig = Readonly<Static<typeof MeteringConfigSchema>>;

/** Parses the environment; throws a ConfigError naming each bad variable. */
export function loadMeteringConfig(env: Record<string, string | undefined>): MeteringConfig {
  return loadConfig(MeteringConfigSchema, env);
}
