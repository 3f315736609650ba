import { loadConfig, Type, type Static } from '@gateway/config';
import { DEFAULT_CATALOG_PATH } from '@gateway/catalog';

/** The router's environment; every variable is listed with its meaning in .env.example. */
export const RouterConfigSchema = Type.Object({
  /** Where the gRPC server listens. */
  ROUTER_LISTEN_ADDR: Type.String({ minLength: 1, default: '0.0.0.0:50052' }),
  /** The port of /metrics, /healthz and /readyz. */
  ROUTER_METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9102 }),
  /** How long in-flight calls may take to finish after SIGTERM before they are cancelled. */
  ROUTER_SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, default: 10_000 }),
  /** The catalog file (YAML or JSON); the catalog shipped with @gateway/catalog by default. */
  CATALOG_PATH: Type.String({ minLength: 1, default: DEFAULT_CATALOG_PATH }),
  /** NATS, where the executors publish deployment health (health.v1.deployment); the router serves without it. */
  NATS_URL: Type.String({ minLength: 1, default: 'nats://127.0.0.1:4222' }),
  /** The subject of the executors' health reports; one per gateway when several share a NATS. */
  DEPLOYMENT_HEALTH_SUBJECT: Type.String({ minLength: 1, default: 'health.v1.deployment' }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info' },
  ),
});

/** The router's validated, frozen configuration. */
export type RouterConfig = Readonly<Static<typeof RouterConfigSchema>>;

/** Reads the router's configuration; fails naming the bad variable. Only main.ts passes process.env. */
export function loadRouterConfig(env: Record<string, string | undefined>): RouterConfig {
  return loadConfig(RouterConfigSchema, env);
}
