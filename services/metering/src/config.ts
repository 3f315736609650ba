import { DEFAULT_CATALOG_PATH } from '@gateway/catalog';
import {
  authPrefixVariable,
  logLevelVariable,
  redisVariables,
  Type,
  usageStreamVariables,
  configReloadVariable,
  grpcConnectionAgeVariables,
  configLoader,
  type ConfigOf,
} from '@gateway/config';
import { REDIS_URL_PATTERN } from '@gateway/redis';
import { NATS_URL_FORM, USAGE_STREAM_NAME_PATTERN } from '@gateway/messaging';

/** Every environment variable of the metering service; .env.example documents each. */
export const MeteringConfigSchema = Type.Object({
  METERING_LISTEN_ADDR: Type.String({
    description: "Address of metering's gRPC server (the UsageService, which the edge reads usage from, and grpc.health.v1).",
    default: '0.0.0.0:50054',
  }),
  METERING_METRICS_PORT: Type.Integer({ description: "Port of metering's /metrics, /healthz and /readyz.", minimum: 0, maximum: 65535, default: 9104 }),
  NATS_URL: Type.String({
    description: 'NATS with JetStream, where the edge publishes usage events.' + NATS_URL_FORM,
    pattern: '^(nats|tls)://',
    default: 'nats://127.0.0.1:4222',
  }),
  ...redisVariables(REDIS_URL_PATTERN),
  ...authPrefixVariable(),
  CATALOG_PATH: Type.String({
    description: 'The model catalog (YAML) to price events with; unset = packages/catalog/catalog.yaml.',
    examples: ['/etc/gateway/catalog.yaml'],
    minLength: 1,
    default: DEFAULT_CATALOG_PATH,
  }),
  ...configReloadVariable(),
  ...grpcConnectionAgeVariables(),
  METERING_UNKNOWN_MODEL_GRACE_MS: Type.Integer({
    description:
      "How long after its request a usage event naming a model metering's catalog lacks is retried before it is dropped as poison (ms): the edges may serve a model added to the catalog before this replica's copy of the file has it (a ConfigMap reaches each pod on its own schedule, within about 2 minutes).",
    minimum: 0,
    default: 300_000,
  }),
  ...logLevelVariable(),
  METERING_SHUTDOWN_GRACE_MS: Type.Integer({ description: 'How long shutdown may take to finish the event being metered (ms).', minimum: 0, default: 5_000 }),
  ...usageStreamVariables(USAGE_STREAM_NAME_PATTERN),
  METERING_DEDUP_RETENTION_MS: Type.Integer({
    description:
      "How long an acknowledged event's de-duplication record stays in Redis (ms): catches a copy the edge publishes again after a lost acknowledgement, past the stream's 2-minute duplicate window.",
    minimum: 0,
    default: 600_000,
  }),
  METERING_RESPONSES_TTL_SECONDS: Type.Integer({
    description:
      'How long a stored response of the Responses API (store: true, the default) is kept for GET /v1/responses/{id} and previous_response_id (s); 30 days, as OpenAI keeps them.',
    minimum: 1,
    default: 2_592_000,
  }),
  RESPONSES_REDIS_URL: Type.String({
    description:
      "A Redis of their own for stored responses (same forms as REDIS_URL); empty: REDIS_URL's. Unlike REDIS_URL's it may evict (allkeys-lru): losing a stored response loses a conversation's continuation, never a limit or usage.",
    pattern: `(${REDIS_URL_PATTERN})|^$`,
    default: '',
  }),
  METERING_RESPONSES_MAX_PER_KEY: Type.Integer({
    description: "Stored responses kept per API key; over it the key's oldest are deleted first. 0: no bound.",
    minimum: 0,
    default: 10_000,
  }),
  METERING_RESPONSES_MAX_BYTES_PER_KEY: Type.Integer({
    description:
      "Bytes of stored responses (the response and its input items) kept per API key, 256 MiB by default; over it the key's oldest are deleted first. 0: no bound.",
    minimum: 0,
    default: 268_435_456,
  }),
  METERING_RESPONSES_MAX_TOTAL_BYTES: Type.Integer({
    description:
      "Bytes of stored responses kept in all, 2 GiB by default; over it the oldest (any key's) are deleted first, so a new response is always stored. Size the responses' Redis to about 1.5 times this. 0: no bound.",
    minimum: 0,
    default: 2_147_483_648,
  }),
});

/** The metering service's configuration, frozen. */
export type MeteringConfig = ConfigOf<typeof MeteringConfigSchema>;

/** Parses the environment; throws a ConfigError naming each bad variable. */
export const loadMeteringConfig = configLoader(MeteringConfigSchema);
