import { NATS_URL_FORM } from '@gateway/messaging';
/**
 * The executor's configuration, read once from the environment by main.ts. `.env.example` lists
 * every variable with a comment.
 */
import { DEFAULT_CATALOG_PATH } from '@gateway/catalog';
import { Type, configReloadVariable, grpcConnectionAgeVariables, configLoader, type ConfigOf } from '@gateway/config';

/** The schema of the executor's environment, with defaults. */
export const ExecutorConfigSchema = Type.Object({
  EXECUTOR_LISTEN_ADDR: Type.String({
    description: "Address the executor's gRPC server (ExecutorService and grpc.health.v1) listens on.",
    default: '0.0.0.0:50053',
    minLength: 1,
  }),
  EXECUTOR_METRICS_PORT: Type.Integer({ description: "Port of the executor's /metrics, /healthz and /readyz.", default: 9103, minimum: 0, maximum: 65535 }),
  CATALOG_PATH: Type.String({
    description: 'The model catalog (YAML); unset = packages/catalog/catalog.yaml.',
    examples: ['/etc/gateway/catalog.yaml'],
    default: DEFAULT_CATALOG_PATH,
    minLength: 1,
  }),
  ...configReloadVariable(),
  ...grpcConnectionAgeVariables(),
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
    { description: 'trace, debug, info, warn, error, fatal or silent.', default: 'info' },
  ),
  EXECUTOR_SHUTDOWN_GRACE_MS: Type.Integer({
    description: 'How long streams in flight may take to finish after SIGTERM/SIGINT before they are cancelled (ms).',
    default: 10_000,
    minimum: 0,
  }),
  EXECUTOR_SHUTDOWN_DELAY_MS: Type.Integer({
    description:
      'How long the executor keeps serving after SIGTERM, reporting not-ready, before it stops accepting (ms): the time the endpoint removal takes to reach every edge (their DNS re-resolution). 0 = stop accepting at once (no load balancer in front).',
    default: 0,
    minimum: 0,
    maximum: 600_000,
  }),
  UPSTREAM_CONNECT_TIMEOUT_MS: Type.Integer({ description: 'Time allowed to open a connection (TCP + TLS) to an upstream (ms).', default: 5_000, minimum: 1 }),
  UPSTREAM_FIRST_BYTE_TIMEOUT_MS: Type.Integer({
    description: "Time allowed from sending a request to the upstream's response headers (ms).",
    default: 60_000,
    minimum: 1,
  }),
  UPSTREAM_IDLE_TIMEOUT_MS: Type.Integer({
    description: 'Longest silence allowed between two pieces of an upstream body or stream (ms).',
    default: 60_000,
    minimum: 1,
  }),
  UPSTREAM_MAX_CONNECTIONS: Type.Integer({
    description: 'Connections per upstream origin, each carrying one request at a time (HTTP/1.1): the cap on concurrent calls to one provider; more wait.',
    default: 1_024,
    minimum: 1,
  }),
  NATS_URL: Type.String({
    description:
      "NATS, where this replica publishes its deployments' health (health.v1.deployment) for the router. The executor serves without it; the router then treats every model as available." +
      NATS_URL_FORM,
    default: 'nats://127.0.0.1:4222',
    minLength: 1,
  }),
  DEPLOYMENT_HEALTH_SUBJECT: Type.String({
    description: "The subject of the health reports; the router's DEPLOYMENT_HEALTH_SUBJECT must match.",
    default: 'health.v1.deployment',
    minLength: 1,
  }),
  EXECUTOR_HEALTH_INTERVAL_MS: Type.Integer({
    description: "How often each executor publishes its deployments' health on NATS (ms); the router forgets a replica silent for 3 intervals.",
    default: 2_000,
    minimum: 100,
  }),
  EXECUTOR_RETRY_MAX_ATTEMPTS: Type.Integer({
    description: 'Tries of one model before its fallbacks, first try included (retryable failures before the first byte).',
    default: 3,
    minimum: 1,
    maximum: 10,
  }),
  EXECUTOR_RETRY_BASE_DELAY_MS: Type.Integer({
    description: 'First retry backoff (ms); later ones grow exponentially with decorrelated jitter.',
    default: 100,
    minimum: 0,
  }),
  EXECUTOR_RETRY_MAX_DELAY_MS: Type.Integer({
    description: 'Longest wait before a retry (ms); an upstream retry hint above it moves on to the next deployment or model.',
    default: 2_000,
    minimum: 0,
  }),
  EXECUTOR_BREAKER_CONSECUTIVE_FAILURES: Type.Integer({
    description: "A deployment's breaker opens after this many retryable failures in a row...",
    default: 5,
    minimum: 1,
  }),
  EXECUTOR_BREAKER_ERROR_RATE: Type.Number({
    description: '...or when more than this share of its last EXECUTOR_BREAKER_WINDOW calls failed (after EXECUTOR_BREAKER_MINIMUM_CALLS calls).',
    default: 0.5,
    exclusiveMinimum: 0,
    exclusiveMaximum: 1,
  }),
  EXECUTOR_BREAKER_WINDOW: Type.Integer({ description: "The calls a breaker's error rate is measured over.", default: 20, minimum: 1 }),
  EXECUTOR_BREAKER_MINIMUM_CALLS: Type.Integer({
    description: "Calls a breaker's window must hold before the error rate can open it.",
    default: 10,
    minimum: 1,
  }),
  EXECUTOR_BREAKER_OPEN_MS: Type.Integer({
    description: 'How long an open breaker waits before probing (ms); doubles after each failed probe, up to EXECUTOR_BREAKER_MAX_OPEN_MS.',
    default: 5_000,
    minimum: 1,
  }),
  EXECUTOR_BREAKER_MAX_OPEN_MS: Type.Integer({ description: 'The longest an open breaker waits before probing (ms).', default: 60_000, minimum: 1 }),
});

/** The parsed, frozen configuration. */
export type ExecutorConfig = ConfigOf<typeof ExecutorConfigSchema>;

/** Parses the environment; throws a ConfigError naming each bad variable. */
export const loadExecutorConfig = configLoader(ExecutorConfigSchema);
