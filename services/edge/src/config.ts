import { ConfigError, Type, loadConfig, type Static, usageStreamVariables } from '@gateway/config';
import { NATS_URL_FORM, USAGE_STREAM_NAME_PATTERN } from '@gateway/messaging';

/** Every variable the edge reads; see .env.example. */
export const EdgeConfigSchema = Type.Object({
  EDGE_HOST: Type.String({ description: 'Address the edge listens on.', default: '0.0.0.0' }),
  EDGE_PORT: Type.Integer({ description: 'Port of the HTTP API: http://127.0.0.1:8080/v1.', default: 8080, minimum: 0, maximum: 65535 }),
  EDGE_ADMIN_PORT: Type.Integer({
    description:
      'Port of the admin API (/admin/v1/*) and the web console (/console), apart from the public API, so that the network can keep them private: the public port then answers 404 for them. 0 = both on EDGE_PORT.',
    default: 0,
    minimum: 0,
    maximum: 65535,
  }),
  EDGE_METRICS_PORT: Type.Integer({
    description: "Port of the edge's /metrics (Prometheus), and /healthz and /readyz for probes, apart from the public API's port.",
    default: 9100,
    minimum: 0,
    maximum: 65535,
  }),
  EDGE_METRICS_KEY_ID: Type.Boolean({
    description: 'Label spend (gateway_cost_usd_total) by API key id (never the key) too: one series per key and model (cardinality).',
    default: false,
  }),
  AUTH_SERVICE_ADDR: Type.String({
    description: 'gRPC address of auth; dns:///name:port spreads the decision streams over every address of the name.',
    default: '127.0.0.1:50051',
  }),
  ROUTER_SERVICE_ADDR: Type.String({ description: 'gRPC address of the router.', default: '127.0.0.1:50052' }),
  EXECUTOR_SERVICE_ADDR: Type.String({
    description: 'gRPC address of the executors; dns:///name:port spreads calls over every address of the name.',
    default: '127.0.0.1:50053',
  }),
  METERING_SERVICE_ADDR: Type.String({
    description: "gRPC address of metering's UsageService, which the usage API and the web console read.",
    default: '127.0.0.1:50054',
  }),
  REQUEST_LOG_SERVICE_ADDR: Type.String({
    description:
      "gRPC address of the request-log service, which the admin API's request search (GET /admin/v1/requests) and the console's Requests page read; empty = no request log (the latest requests metering keeps only).",
    default: '',
  }),
  REQUEST_LOG_BODY_MAX_BYTES: Type.Integer({
    description:
      "With a request log: the most bytes of each body (the request's, the answer's) the log keeps for a key or team with log_bodies on, redacted of secrets and cut at a UTF-8 boundary with a marker saying how much was cut.",
    minimum: 1_024,
    maximum: 1_048_576,
    default: 32_768,
  }),
  REQUEST_LOG_BODY_BUFFER_BYTES: Type.Integer({
    description:
      'With a request log: the most bytes of bodies an edge holds while JetStream has not acknowledged them; bodies beyond it are dropped (the request is answered and logged all the same).',
    minimum: 65_536,
    default: 16_777_216,
  }),
  REQUEST_LOG_BODIES_VIEWERS: Type.String({
    description:
      "Viewers (role viewer) who may see request bodies in GET /admin/v1/requests/{id} and the console: their subjects (an admin token's id, an SSO user's subject), comma-separated, or * for every viewer. Admins always may; empty = no viewer.",
    default: '',
  }),
  MCP_SERVICE_ADDR: Type.String({
    description:
      "gRPC address of the MCP service, which the MCP gateway (/mcp) and the admin API's /admin/v1/mcp-servers call; dns:///name:port spreads calls over every address of the name. Empty: no MCP gateway (/mcp is a 404).",
    default: '',
  }),
  EDGE_MCP_BODY_LIMIT_BYTES: Type.Integer({
    description: 'Largest JSON-RPC message accepted on /mcp, in bytes (larger: 413 with a JSON-RPC error).',
    default: 1024 * 1024,
    minimum: 1024,
  }),
  EDGE_MCP_DEADLINE_MS: Type.Integer({
    description: "How long the edge waits for the MCP service's answer to one /mcp message (ms): longer than the MCP service's MCP_TOOL_CALL_TIMEOUT_MS.",
    default: 70_000,
    minimum: 1_000,
  }),
  GUARD_SERVICE_ADDR: Type.String({
    description:
      "gRPC address of the guard service, which checks prompts, answers and MCP tool calls against the operator's policies and which the admin API's /admin/v1/policies call; dns:///name:port spreads calls over every address of the name. Empty: no guardrails (nothing is checked, /admin/v1/policies is a 404).",
    default: '',
  }),
  EDGE_GUARD_DEADLINE_MARGIN_MS: Type.Integer({
    description:
      "How much longer than a policy's own deadline (the longest of its checks) the edge waits for the guard's Check (ms): the hop and the guard's own work; past it the policy's on_error applies.",
    default: 250,
    minimum: 0,
    maximum: 60_000,
  }),
  CACHE_SERVICE_ADDR: Type.String({
    description:
      "gRPC address of the cache service, which keeps answers for the requests the operator's cache settings cover and which the admin API's /admin/v1/cache calls; dns:///name:port spreads calls over every address of the name. Empty: no response cache (every request reaches a model, /admin/v1/cache is a 404).",
    default: '',
  }),
  EDGE_CACHE_LOOKUP_DEADLINE_MS: Type.Integer({
    description:
      "How long the edge waits for the cache's answer to a lookup (ms); past it, or when the cache fails, the request is a miss and goes to its model: a cache that does not answer never fails or slows a request by more than this.",
    default: 20,
    minimum: 1,
    maximum: 10_000,
  }),
  EDGE_CACHE_SEMANTIC_DEADLINE_MS: Type.Integer({
    description:
      "How long the edge waits for the embedding of a request's question when its cache settings name a semantic model (ms); past it, or when the embedding fails, the request is looked up exactly only: a semantic cache never adds more than this (and one lookup) to a miss.",
    default: 1_000,
    minimum: 1,
    maximum: 60_000,
  }),
  BATCH_SERVICE_ADDR: Type.String({
    description:
      "gRPC address of the batch service, which keeps the files and batches of OpenAI's Files and Batch APIs (/v1/files, /v1/batches) and runs each batch's lines through the edge with the owner's key; dns:///name:port spreads calls over every address of the name. Empty: no batch API (/v1/files and /v1/batches answer 404).",
    default: '',
  }),
  EDGE_MAX_FILE_BYTES: Type.Integer({
    description:
      'Largest file POST /v1/files accepts, in bytes (larger: 413); streamed to the batch service as it arrives, never held whole in memory. The batch service bounds its files too (BATCH_MAX_FILE_BYTES).',
    default: 209_715_200,
    minimum: 1024,
  }),
  NATS_URL: Type.String({
    description:
      "NATS with JetStream (usage events: the edge publishes, metering consumes); a cluster as its servers' URLs, comma-separated (nats://nats-0:4222,nats://nats-1:4222,nats://nats-2:4222)." +
      NATS_URL_FORM,
    default: 'nats://127.0.0.1:4222',
  }),
  ...usageStreamVariables(USAGE_STREAM_NAME_PATTERN),
  LOG_LEVEL: Type.String({ description: 'pino log level: fatal, error, warn, info, debug, trace.', default: 'info' }),
  EDGE_USAGE_QUEUE_MAX_EVENTS: Type.Integer({
    description:
      "Usage events held (queued, or awaiting JetStream's acknowledgement) while NATS is unavailable or the usage stream refuses them as full, about 200 bytes each; beyond it new ones are dropped (gateway_usage_events_dropped_total).",
    default: 100_000,
    minimum: 1,
  }),
  EDGE_USAGE_HANDOVER_AFTER_MS: Type.Integer({
    description:
      "Usage events NATS has not taken for this long are handed to metering directly (its RecordUsageEvents, metered once by event id), so a long NATS outage leaves no usage waiting in an edge's memory (ms); 0 = held until NATS takes them (at shutdown they are handed over regardless).",
    default: 600_000,
    minimum: 0,
  }),
  EDGE_BODY_LIMIT_BYTES: Type.Integer({ description: 'Largest accepted request body in bytes (larger: 413).', default: 16 * 1024 * 1024, minimum: 1024 }),
  EDGE_AUTH_STREAMS: Type.Integer({
    description:
      'Long-lived streams carrying quota decisions and settlements to auth, a message each instead of a unary call each (less than half the CPU per decision); 0 = one unary call per decision.',
    default: 2,
    minimum: 0,
    maximum: 64,
  }),
  EDGE_EXECUTOR_STREAMS: Type.Integer({
    description:
      'Long-lived streams carrying completions, whole and streamed, to the executors: a message each way (a streamed one: a message per batch of chunks) instead of a gRPC call each; keep it at least the number of executor replicas, which the streams are spread over. 0 = a call per completion.',
    default: 8,
    minimum: 0,
    maximum: 256,
  }),
  EDGE_CONTROL_DEADLINE_MS: Type.Integer({ description: 'Deadline of each auth and router call, in milliseconds.', default: 2000, minimum: 10 }),
  EDGE_COMPLETION_DEADLINE_MS: Type.Integer({
    description: 'Deadline of a whole completion, streams included, in milliseconds.',
    default: 600_000,
    minimum: 100,
  }),
  EDGE_STREAM_KEEPALIVE_MS: Type.Integer({
    description: 'A ": ping" SSE comment is sent when a stream has been silent this long (ms).',
    default: 15_000,
    minimum: 100,
  }),
  EDGE_WS_MAX_MESSAGE_BYTES: Type.Integer({
    description: 'Largest message a Responses WebSocket (GET /v1/responses upgraded) accepts, in bytes; a larger one closes the socket (1009).',
    default: 16 * 1024 * 1024,
    minimum: 1024,
  }),
  EDGE_WS_IDLE_TIMEOUT_MS: Type.Integer({
    description: 'A Responses WebSocket with no response running and no message for this long is closed (ms).',
    default: 300_000,
    minimum: 100,
  }),
  EDGE_WS_MAX_LIFETIME_MS: Type.Integer({
    description:
      'A Responses WebSocket is closed this long after it opened, once its running response is done, with the `websocket_connection_limit_reached` error event that makes Codex reconnect (ms).',
    default: 3_600_000,
    minimum: 100,
  }),
  EDGE_WS_PING_INTERVAL_MS: Type.Integer({
    description: 'A Responses WebSocket is pinged this often; one that has not answered the previous ping is dropped (ms).',
    default: 30_000,
    minimum: 100,
  }),
  EDGE_SHUTDOWN_GRACE_MS: Type.Integer({ description: 'How long in-flight requests may take to finish after SIGTERM (ms).', default: 20_000, minimum: 0 }),
  EDGE_SHUTDOWN_DELAY_MS: Type.Integer({
    description:
      'How long the edge keeps serving after SIGTERM, reporting not-ready, before it stops accepting (ms): the time the endpoint removal takes to reach every load balancer. 0 = stop accepting at once (no load balancer in front).',
    default: 0,
    minimum: 0,
    maximum: 600_000,
  }),
  EDGE_ADMIN_TOKEN: Type.String({
    description:
      'Bearer token of the admin API (/admin/v1/*), at least 32 characters; empty = no admin API (404), so a deployment that sets no token exposes no key management.',
    default: '',
    pattern: '^(\\S{32,})?$',
  }),
  EDGE_OIDC_ISSUER: Type.String({
    description:
      'OpenID Connect issuer for single sign-on to the console and the admin API (https://login.example.com/realms/x; its /.well-known/openid-configuration is read); http only on loopback. Empty = no SSO.',
    default: '',
  }),
  EDGE_OIDC_CLIENT_ID: Type.String({ description: 'Client id of the gateway at the OpenID Connect provider (required with EDGE_OIDC_ISSUER).', default: '' }),
  EDGE_OIDC_CLIENT_SECRET: Type.String({
    description: 'Client secret of the gateway at the OpenID Connect provider (required with EDGE_OIDC_ISSUER).',
    default: '',
  }),
  EDGE_OIDC_REDIRECT_URL: Type.String({
    description:
      "Redirect URI registered with the provider, ending in /console/sso/callback (https://gateway.example.com/console/sso/callback); empty = derived from each request's scheme and Host (set it behind a proxy).",
    default: '',
  }),
  EDGE_OIDC_SCOPES: Type.String({ description: 'Scopes asked for at sign-in, space-separated (openid is always asked).', default: 'openid profile email' }),
  EDGE_OIDC_ROLES_CLAIM: Type.String({
    description: "Claim of the ID token (else of the userinfo answer) whose values give an SSO user's role: a string or an array of strings.",
    default: 'groups',
    minLength: 1,
  }),
  EDGE_OIDC_ADMIN_VALUES: Type.String({
    description: 'Values of the roles claim that make a user admin, comma-separated.',
    default: 'gateway-admin',
  }),
  EDGE_OIDC_VIEWER_VALUES: Type.String({
    description: 'Values of the roles claim that make a user viewer (read only), comma-separated; a user with neither is refused.',
    default: 'gateway-viewer',
  }),
  EDGE_SESSION_SECRET: Type.String({
    description:
      'Secret (at least 32 characters) that signs SSO sessions and sign-in flows; the same on every edge replica. Required with EDGE_OIDC_ISSUER; changing it ends every session.',
    default: '',
    pattern: '^(\\S{32,})?$',
  }),
  EDGE_SESSION_TTL_SECONDS: Type.Integer({ description: 'How long an SSO session lasts, in seconds.', default: 8 * 3600, minimum: 60, maximum: 7 * 24 * 3600 }),
  EDGE_ADMIN_TOKENS_ENABLED: Type.Boolean({
    description:
      "Accept admin tokens kept by auth (bra-..., roles admin and viewer; created through the admin API or auth's CLI) on the admin API and the console, besides EDGE_ADMIN_TOKEN. The admin API exists when either is set; neither = 404.",
    default: false,
  }),
  EDGE_DEFAULT_COMPLETION_BUDGET_TOKENS: Type.Integer({
    description: "Completion budget reserved against tokens/min when a request sets no max_tokens (capped by the model's max output).",
    default: 4096,
    minimum: 1,
  }),
});

/** The edge's configuration, frozen. */
export type EdgeConfig = Readonly<Static<typeof EdgeConfigSchema>>;

/** Whether the host of a URL is this machine, where plain http is allowed (tests, local providers). */
export function isLoopbackUrl(url: URL): boolean {
  return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

/** Why the single sign-on settings cannot work together, or undefined when SSO is off or sound. */
function ssoProblem(config: EdgeConfig): string | undefined {
  if (!config.EDGE_OIDC_ISSUER) return undefined;
  let issuer: URL;
  try {
    issuer = new URL(config.EDGE_OIDC_ISSUER);
  } catch {
    return 'EDGE_OIDC_ISSUER must be a URL';
  }
  if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && isLoopbackUrl(issuer))) return 'EDGE_OIDC_ISSUER must be https (http only on loopback)';
  for (const name of ['EDGE_OIDC_CLIENT_ID', 'EDGE_OIDC_CLIENT_SECRET', 'EDGE_SESSION_SECRET'] as const) {
    if (!config[name]) return `${name} is required with EDGE_OIDC_ISSUER`;
  }
  if (config.EDGE_OIDC_REDIRECT_URL && !/^https?:\/\/[^/]+\/console\/sso\/callback$/.test(config.EDGE_OIDC_REDIRECT_URL)) {
    return 'EDGE_OIDC_REDIRECT_URL must be an http(s) URL ending in /console/sso/callback';
  }
  return undefined;
}

/** Reads the edge's configuration from the environment. */
export function readEdgeConfig(env: Record<string, string | undefined>): EdgeConfig {
  const config = loadConfig(EdgeConfigSchema, env);
  const problem = ssoProblem(config);
  if (problem) throw new ConfigError(`invalid configuration: ${problem}`);
  return config;
}
