import { grpcConnectionAgeVariables, logLevelVariable, mcpCredentialsVariables, redisVariables, Type, configLoader, type ConfigOf } from '@gateway/config';
import { REDIS_URL_PATTERN } from '@gateway/redis';

/** The shared declarations of the OAuth variables; the MCP service says what its empty values do. */
const oauthVariables = mcpCredentialsVariables();

/** Every environment variable of the MCP service; .env.example documents each. */
export const McpConfigSchema = Type.Object({
  MCP_LISTEN_ADDR: Type.String({
    description: "Where the MCP service's gRPC server (gateway.mcp.v1.McpService and grpc.health.v1) listens.",
    minLength: 1,
    default: '0.0.0.0:50057',
  }),
  MCP_METRICS_PORT: Type.Integer({ description: "Port of the MCP service's /metrics, /healthz and /readyz.", minimum: 0, maximum: 65535, default: 9107 }),
  REDIS_URL: redisVariables(REDIS_URL_PATTERN).REDIS_URL,
  MCP_REDIS_PREFIX: Type.String({
    description: 'Prefix of every Redis key the MCP service writes (upstream servers, sessions), so environments can share one Redis.',
    pattern: '^[A-Za-z0-9:_-]*$',
    default: 'mcp:',
  }),
  MCP_SECRETS_KEY: Type.String({
    description:
      'The key (32 bytes, base64) the static headers of upstream MCP servers (their API keys) are encrypted with in Redis (AES-256-GCM); the same on every replica. Empty: servers with headers are refused. Generate one with `openssl rand -base64 32`.',
    pattern: '^([A-Za-z0-9+/]{43}=)?$',
    default: '',
  }),
  MCP_CREDENTIALS_KEY: Type.String({
    description:
      "The key (32 bytes, base64) sealing each gateway key's OAuth tokens for upstream MCP servers in Redis (AES-256-GCM); the same on every replica. Empty: a key derived from MCP_SECRETS_KEY (HKDF-SHA256) is used, and with neither, MCP servers that need OAuth are refused. Changing it makes every user sign in again. Generate one with `openssl rand -base64 32`.",
    pattern: oauthVariables.MCP_CREDENTIALS_KEY.pattern,
    default: '',
  }),
  MCP_OAUTH_REDIRECT_URL: Type.String({
    description:
      "The gateway's public OAuth callback for upstream MCP servers, ending in /mcp/oauth/callback (https://gateway.example.com/mcp/oauth/callback, served by the edge): where their authorization servers send each user back. Empty: MCP servers that need OAuth are refused.",
    pattern: oauthVariables.MCP_OAUTH_REDIRECT_URL.pattern,
    default: '',
  }),
  MCP_RELOAD_INTERVAL_MS: Type.Integer({
    description: 'How often each replica looks for a change of the upstream servers in Redis (ms): a server added, changed or removed is served within this.',
    minimum: 50,
    maximum: 60_000,
    default: 500,
  }),
  MCP_TOOL_CALL_TIMEOUT_MS: Type.Integer({
    description: 'The longest a tools/call (or any other request) may wait for an upstream MCP server (ms); later, the client gets a JSON-RPC error.',
    minimum: 100,
    maximum: 3_600_000,
    default: 60_000,
  }),
  MCP_MAX_RESPONSE_BYTES: Type.Integer({
    description:
      "The largest upstream answer (a tool's result, a resource) relayed to a client, in bytes of JSON; larger answers are refused with a JSON-RPC error.",
    minimum: 1_024,
    maximum: 64 * 1024 * 1024,
    default: 4 * 1024 * 1024,
  }),
  MCP_SESSION_TTL_SECONDS: Type.Integer({
    description: 'How long an idle client session (Mcp-Session-Id) lives; each message extends it.',
    minimum: 10,
    maximum: 30 * 86_400,
    default: 86_400,
  }),
  MCP_SHUTDOWN_GRACE_MS: Type.Integer({
    description:
      "How long the MCP service's in-flight calls may take to finish after SIGTERM (ms): at least MCP_TOOL_CALL_TIMEOUT_MS, so that a rollout does not cut a tool call the timeout allows.",
    minimum: 0,
    default: 60_000,
  }),
  MCP_SHUTDOWN_DELAY_MS: Type.Integer({
    description:
      'How long the MCP service keeps serving after SIGTERM, reporting not-ready, before it stops accepting (ms): the time the endpoint removal takes to reach every edge. 0 = stop accepting at once (no load balancer in front).',
    minimum: 0,
    maximum: 600_000,
    default: 0,
  }),
  ...grpcConnectionAgeVariables(),
  ...logLevelVariable(),
});

/** The MCP service's configuration, frozen. */
export type McpConfig = ConfigOf<typeof McpConfigSchema>;

/** Parses the environment; throws a ConfigError naming each bad variable. Only main.ts passes process.env. */
export const loadMcpConfig = configLoader(McpConfigSchema);
