/** The batch service's configuration: every variable it reads, with its description and default. */
import { ConfigError, configLoader, type ConfigOf, logLevelVariable, Type } from '@gateway/config';

/** Every environment variable of the batch service; .env.example documents each. */
export const BatchConfigSchema = Type.Object({
  BATCH_LISTEN_ADDR: Type.String({
    description: "Where the batch service's gRPC server (gateway.batch.v1.BatchService and grpc.health.v1) listens.",
    minLength: 1,
    default: '0.0.0.0:50059',
  }),
  BATCH_METRICS_PORT: Type.Integer({ description: "Port of the batch service's /metrics, /healthz and /readyz.", minimum: 0, maximum: 65535, default: 9109 }),
  DATABASE_URL: Type.String({
    description:
      'PostgreSQL keeping the files, batches and their lines, in the schema `batch` of this database (postgres://user:password@host:5432/database); the service applies its migrations at start. Required.',
    pattern: '^(postgres(ql)?://.*)?$',
    default: '',
    examples: ['postgres://postgres@127.0.0.1:5432/gateway'],
  }),
  BATCH_EDGE_URL: Type.String({
    description:
      "The edge's API, where every line of a batch is sent (with the batch owner's key), so that it is admitted, limited, routed, metered and logged as the same request online.",
    pattern: '^https?://',
    default: 'http://127.0.0.1:8080',
  }),
  BATCH_SECRETS_KEY: Type.String({
    description:
      "The key (32 bytes, base64) sealing each running batch's API key in PostgreSQL (AES-256-GCM); the same on every replica. Required. Generate one with `openssl rand -base64 32`.",
    pattern: '^([A-Za-z0-9+/]{43}=)?$',
    default: '',
  }),
  BATCH_LANE_CONCURRENCY: Type.Integer({
    description: "Lines each replica's batch lane sends to the edge at once, at most.",
    minimum: 1,
    maximum: 1_024,
    default: 16,
  }),
  BATCH_LINE_ATTEMPTS: Type.Integer({
    description:
      'Times a line is sent at most: a 429, 502, 503 or 504 answer or a connection failure is sent again (after Retry-After, else a backoff from 1 s) until this many attempts.',
    minimum: 1,
    maximum: 20,
    default: 5,
  }),
  BATCH_LINE_LEASE_MS: Type.Integer({
    description:
      'How long a replica holds a line it runs before another may take it (ms), renewed while it runs: a replica that dies leaves its lines to the others after this.',
    minimum: 1_000,
    default: 60_000,
  }),
  BATCH_POLL_INTERVAL_MS: Type.Integer({
    description: 'How often an idle lane looks for lines to run and batches to finish (ms); a batch created on this replica starts at once.',
    minimum: 10,
    maximum: 60_000,
    default: 200,
  }),
  BATCH_MAX_FILE_BYTES: Type.Integer({ description: 'The largest file kept, in bytes; a larger upload is refused.', minimum: 1_024, default: 209_715_200 }),
  BATCH_MAX_LINES: Type.Integer({ description: 'The most requests (lines) a batch file holds.', minimum: 1, default: 50_000 }),
  BATCH_MAX_FILES_PER_KEY: Type.Integer({
    description: 'The most files a key keeps (uploads and batch outputs); an upload past it is refused.',
    minimum: 1,
    default: 1_000,
  }),
  BATCH_MAX_BYTES_PER_KEY: Type.Integer({
    description: "The most bytes a key's files hold together; an upload past it is refused.",
    minimum: 1_024,
    default: 10_737_418_240,
  }),
  BATCH_SHUTDOWN_GRACE_MS: Type.Integer({
    description:
      'How long the calls and lines in flight may take to finish after SIGTERM (ms); the lines still running then are handed back for another replica to take at once.',
    minimum: 0,
    default: 10_000,
  }),
  ...logLevelVariable(),
});

/** The batch service's configuration, frozen. */
export type BatchConfig = ConfigOf<typeof BatchConfigSchema>;

const loadSchema = configLoader(BatchConfigSchema);

/** Parses the environment; throws a ConfigError naming each bad or missing variable. Only main.ts passes process.env. */
export function loadBatchConfig(env: Record<string, string | undefined>): BatchConfig {
  const config = loadSchema(env);
  if (!config.DATABASE_URL) throw new ConfigError('invalid configuration: DATABASE_URL is required (postgres://user:password@host:5432/database)');
  if (!config.BATCH_SECRETS_KEY)
    throw new ConfigError('invalid configuration: BATCH_SECRETS_KEY is required (32 random bytes in base64: openssl rand -base64 32)');
  return config;
}
