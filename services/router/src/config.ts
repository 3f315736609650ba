import { NATS_URL_FORM } from '@gateway/messaging';
import { Type, configReloadVariable, grpcConnectionAgeVariables, configLoader, type ConfigOf } from '@gateway/config';
import { DEFAULT_CATALOG_PATH } from '@gateway/catalog';

/** The router's environment; every variable is listed with its meaning in .env.example. */
export const RouterConfigSchema = Type.Object({
  ROUTER_LISTEN_ADDR: Type.String({
    description: "Where the router's gRPC server (gateway.router.v1.RouterService and grpc.health.v1) listens.",
    minLength: 1,
    default: '0.0.0.0:50052',
  }),
  ROUTER_METRICS_PORT: Type.Integer({
    description: "Port of the router's HTTP server with /metrics, /healthz and /readyz.",
    minimum: 0,
    maximum: 65535,
    default: 9102,
  }),
  ROUTER_SHUTDOWN_GRACE_MS: Type.Integer({
    description: "How long the router's in-flight calls may take to finish after SIGTERM before they are cancelled (ms).",
    minimum: 0,
    default: 10_000,
  }),
  CATALOG_PATH: Type.String({
    description:
      'The model catalog (YAML or JSON) read by the router, the executor and metering; unset = the one shipped with @gateway/catalog (packages/catalog/catalog.yaml).',
    examples: ['/etc/gateway/catalog.yaml'],
    minLength: 1,
    default: DEFAULT_CATALOG_PATH,
  }),
  ...configReloadVariable(),
  ...grpcConnectionAgeVariables(),
  NATS_URL: Type.String({
    description:
      "NATS, where the executors publish their deployments' health (health.v1.deployment): a model no executor has a healthy deployment of is pushed to the edges as unavailable. Optional: without NATS every model counts as available." +
      NATS_URL_FORM,
    minLength: 1,
    default: 'nats://127.0.0.1:4222',
  }),
  DEPLOYMENT_HEALTH_SUBJECT: Type.String({
    description: "The NATS subject of the executors' health reports (executor and router); give each gateway its own when several share one NATS.",
    minLength: 1,
    default: 'health.v1.deployment',
  }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { description: 'pino level: fatal, error, warn, info, debug, trace or silent.', default: 'info' },
  ),
});

/** The router's validated, frozen configuration. */
export type RouterConfig = ConfigOf<typeof RouterConfigSchema>;

/** Reads the router's configuration; fails naming the bad variable. Only main.ts passes process.env. */
export const loadRouterConfig = configLoader(RouterConfigSchema);
