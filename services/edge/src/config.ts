import { Type, loadConfig, type Static } from '@gateway/config';
import { USAGE_STREAM_NAME_PATTERN } from '@gateway/messaging';

/** Every variable the edge reads; see .env.example. */
export const EdgeConfigSchema = Type.Object({
  EDGE_HOST: Type.String({ default: '0.0.0.0' }),
  EDGE_PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
  /** Port of /metrics (and /healthz, /readyz for probes), apart from the public API's port. */
  EDGE_METRICS_PORT: Type.Integer({ default: 9100, minimum: 0, maximum: 65535 }),
  /** Adds the API key id (never the key) as a label of gateway_cost_usd_total: one series per key and model. */
  EDGE_METRICS_KEY_ID: Type.Boolean({ default: false }),
  AUTH_SERVICE_ADDR: Type.String({ default: '127.0.0.1:50051' }),
  ROUTER_SERVICE_ADDR: Type.String({ default: '127.0.0.1:50052' }),
  EXECUTOR_SERVICE_ADDR: Type.String({ default: '127.0.0.1:50053' }),
  /** Metering's UsageService, which the usage API and the web console read usage from. */
  METERING_SERVICE_ADDR: Type.String({ default: '127.0.0.1:50054' }),
  NATS_URL: Type.String({ default: 'nats://127.0.0.1:4222' }),
  /** The JetStream stream of usage events (and so their subjects); one per gateway sharing a NATS. */
  USAGE_STREAM: Type.String({ pattern: USAGE_STREAM_NAME_PATTERN, default: 'USAGE' }),
  /** Copies JetStream keeps of every usage event: 1 on one NATS server, 3 on a cluster. Metering's must match. */
  USAGE_STREAM_REPLICAS: Type.Integer({ minimum: 1, maximum: 5, default: 1 }),
  LOG_LEVEL: Type.String({ default: 'info' }),
  /**
   * Usage events the edge holds (queued, or awaiting JetStream's acknowledgement) while NATS or the
   * stream is unavailable; beyond it new events are dropped and counted
   * (gateway_usage_events_dropped_total{reason="queue_full"}). About 200 bytes each.
   */
  EDGE_USAGE_QUEUE_MAX_EVENTS: Type.Integer({ default: 100_000, minimum: 1 }),
  /** Largest accepted request body. */
  EDGE_BODY_LIMIT_BYTES: Type.Integer({ default: 16 * 1024 * 1024, minimum: 1024 }),
  /**
   * Long-lived streams carrying quota decisions and settlements to auth, spread over its replicas;
   * 0 makes one unary call per decision.
   */
  EDGE_AUTH_STREAMS: Type.Integer({ default: 2, minimum: 0, maximum: 64 }),
  /**
   * Long-lived streams carrying completions, whole and streamed, to the executors, spread over
   * their replicas (keep it at least the number of replicas); 0 makes one call of its own per
   * completion.
   */
  EDGE_EXECUTOR_STREAMS: Type.Integer({ default: 8, minimum: 0, maximum: 256 }),
  /** Deadline of auth and router calls. */
  EDGE_CONTROL_DEADLINE_MS: Type.Integer({ default: 2000, minimum: 10 }),
  /** Deadline of a whole completion, stream included. */
  EDGE_COMPLETION_DEADLINE_MS: Type.Integer({ default: 600_000, minimum: 100 }),
  /** A `: ping` comment is sent when a stream has been silent this long. */
  EDGE_STREAM_KEEPALIVE_MS: Type.Integer({ default: 15_000, minimum: 100 }),
  /** How long in-flight requests may take to finish on SIGTERM. */
  EDGE_SHUTDOWN_GRACE_MS: Type.Integer({ default: 20_000, minimum: 0 }),
  /**
   * Bearer token of the admin API (/admin/v1/keys), at least 32 characters. Empty: the admin API
   * does not exist (404), so a deployment that sets no token exposes no key management.
   */
  EDGE_ADMIN_TOKEN: Type.String({ default: '', pattern: '^(\\S{32,})?$' }),
  /** Completion tokens reserved when a request sets no max_tokens (capped by the model's largest output). */
  EDGE_DEFAULT_COMPLETION_BUDGET_TOKENS: Type.Integer({ default: 4096, minimum: 1 }),
});

/** The edge's configuration, frozen. */
export type EdgeConfig = Readonly<Static<typeof EdgeConfigSchema>>;

/** Reads the edge's configuration from the environment. */
export function readEdgeConfig(env: Record<string, string | undefined>): EdgeConfig {
  return loadConfig(EdgeConfigSchema, env);
}
