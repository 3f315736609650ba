import { DEFAULT_CATALOG_PATH } from '@gateway/catalog';
import { configReloadVariable, grpcConnectionAgeVariables, logLevelVariable, Type, usageStreamVariables, configLoader, type ConfigOf } from '@gateway/config';
import { NATS_URL_FORM, USAGE_STREAM_NAME_PATTERN } from '@gateway/messaging';

/** Every environment variable of the request-log service; .env.example documents each. */
export const RequestLogConfigSchema = Type.Object({
  REQUEST_LOG_LISTEN_ADDR: Type.String({
    description: "Address of the request log's gRPC server (RequestLogService, which the edge searches, and grpc.health.v1).",
    default: '0.0.0.0:50055',
  }),
  REQUEST_LOG_METRICS_PORT: Type.Integer({
    description: "Port of the request log's /metrics, /healthz and /readyz.",
    minimum: 0,
    maximum: 65535,
    default: 9105,
  }),
  DATABASE_URL: Type.String({
    description:
      'PostgreSQL the request log is written to and searched in (postgres://user:password@host:5432/database); the service applies its migrations at start.',
    pattern: '^postgres(ql)?://',
    examples: ['postgres://postgres@127.0.0.1:5432/gateway'],
  }),
  REQUEST_LOG_DATABASE_POOL_SIZE: Type.Integer({
    description: 'PostgreSQL connections the service keeps at most (writer and searches together).',
    minimum: 2,
    default: 10,
  }),
  REQUEST_LOG_DATABASE_SSLMODE: Type.String({
    description:
      "TLS to PostgreSQL when DATABASE_URL has no sslmode, with libpq's meaning (docs/deploy-postgres.md): disable (no TLS), prefer (encrypted, not verified), require (encrypted; verified as verify-ca only when a CA is given), verify-ca (the certificate against the CA), verify-full (the CA and the host name). Empty = DATABASE_URL's sslmode, else disable.",
    pattern: '^(|disable|prefer|require|verify-ca|verify-full)$',
    default: '',
  }),
  REQUEST_LOG_DATABASE_CA_FILE: Type.String({
    description:
      "PEM file of the CA that signed PostgreSQL's certificate, as libpq's sslrootcert (used when DATABASE_URL has none): the Deployment mounts the Secret gateway-request-log-database-ca at /etc/gateway/database-ca (key ca.crt). Empty = none (verify-full then trusts Node's built-in CAs).",
    default: '',
  }),
  REQUEST_LOG_DATABASE_PROBE_INTERVAL_MS: Type.Integer({
    description:
      'While PostgreSQL does not answer, how often the writer asks it again (ms); the messages it holds meanwhile are written as soon as it answers, not at their redelivery delays.',
    minimum: 100,
    default: 1_000,
  }),
  NATS_URL: Type.String({
    description: 'NATS with JetStream, where the edge publishes usage events.' + NATS_URL_FORM,
    pattern: '^(nats|tls)://',
    default: 'nats://127.0.0.1:4222',
  }),
  CATALOG_PATH: Type.String({
    description: 'The model catalog (YAML) to price requests with, as metering prices them; unset = packages/catalog/catalog.yaml.',
    examples: ['/etc/gateway/catalog.yaml'],
    minLength: 1,
    default: DEFAULT_CATALOG_PATH,
  }),
  ...configReloadVariable(),
  ...grpcConnectionAgeVariables(),
  REQUEST_LOG_RETENTION_DAYS: Type.Integer({
    description: "Days of requests the log keeps: a day's partition is dropped once it is entirely older than this.",
    minimum: 1,
    default: 30,
  }),
  REQUEST_LOG_BODY_RETENTION_DAYS: Type.Integer({
    description:
      "Days the bodies of requests (kept only for keys or teams with log_bodies on) are kept: a day's partition of request_bodies is dropped once it is entirely older than this.",
    minimum: 1,
    default: 7,
  }),
  REQUEST_LOG_BODY_STREAM_MAX_BYTES: Type.Integer({
    description:
      'The most bytes the JetStream stream of request bodies holds (the edge publishes them there, this service reads them); when full it forgets its oldest bodies.',
    minimum: 1_048_576,
    default: 268_435_456,
  }),
  REQUEST_LOG_PARTITIONS_AHEAD_DAYS: Type.Integer({ description: 'Daily partitions created ahead of today.', minimum: 1, default: 3 }),
  REQUEST_LOG_MAINTENANCE_INTERVAL_MS: Type.Integer({
    description: 'How often partitions are created ahead and those past the retention dropped (ms).',
    minimum: 1_000,
    default: 3_600_000,
  }),
  REQUEST_LOG_BATCH_ROWS: Type.Integer({ description: 'Rows one INSERT writes at most.', minimum: 1, maximum: 2_000, default: 500 }),
  REQUEST_LOG_BATCH_DELAY_MS: Type.Integer({
    description: 'How long a row waits for others to share its INSERT (ms); its message is acknowledged once the INSERT commits.',
    minimum: 0,
    default: 100,
  }),
  ...logLevelVariable(),
  REQUEST_LOG_SHUTDOWN_GRACE_MS: Type.Integer({ description: 'How long shutdown may take to commit the rows being written (ms).', minimum: 0, default: 5_000 }),
  ...usageStreamVariables(USAGE_STREAM_NAME_PATTERN),
});

/** The request-log service's configuration, frozen. */
export type RequestLogConfig = ConfigOf<typeof RequestLogConfigSchema>;

/** Parses the environment; throws a ConfigError naming each bad variable. */
export const loadRequestLogConfig = configLoader(RequestLogConfigSchema);
