/**
 * Variables more than one service reads, declared once so that each reads, checks and documents
 * them alike. The patterns come from the packages that own them (@gateway/redis,
 * @gateway/messaging), which this package does not depend on.
 */
import { Type } from '@sinclair/typebox';

/** REDIS_URL and REDIS_WAIT_REPLICAS: auth (and its CLI) and metering. */
export function redisVariables(urlPattern: string) {
  return {
    REDIS_URL: Type.String({
      description:
        "Redis (auth's keys and quotas, metering's totals): redis://host:port for one server (rediss:// with TLS), redis-cluster://host:port,host:port,... for a Redis Cluster (rediss-cluster:// with TLS).",
      pattern: urlPattern,
      default: 'redis://127.0.0.1:6379',
    }),
    REDIS_WAIT_REPLICAS: Type.Integer({
      description:
        "Redis replicas that must have metered usage and key changes before they count (WAIT; auth and metering): 0 for none, 1 on a cluster with replicas, so that a master's failover loses neither.",
      minimum: 0,
      maximum: 5,
      default: 0,
    }),
    REDIS_ALLOW_EVICTION: Type.Boolean({
      description:
        "Start although REDIS_URL's Redis may evict keys (a maxmemory-policy other than noeviction). Evicting would reset rate-limit windows, lose keys and budgets and meter usage twice, so auth and metering refuse to start on it unless this is true (a test Redis, or a policy you have checked cannot evict).",
      default: false,
    }),
  };
}

/**
 * AUTH_REDIS_PREFIX: auth's, and metering's, which settles the token reservations auth opens there;
 * the two must agree, or a reservation never settles and holds its estimate until it expires.
 */
export function authPrefixVariable() {
  return {
    AUTH_REDIS_PREFIX: Type.String({
      description:
        "Prefix of every Redis key auth (and its CLI) writes, so environments can share one Redis; metering settles auth's token reservations under it, so set it the same on both.",
      pattern: '^[A-Za-z0-9:_-]*$',
      default: 'auth:',
    }),
  };
}

/** USAGE_STREAM, USAGE_STREAM_REPLICAS and the stream's limits: the edge and metering, which must agree on all of them. */
export function usageStreamVariables(namePattern: string) {
  return {
    USAGE_STREAM: Type.String({
      description:
        'The JetStream stream of usage events (edge and metering); one per gateway sharing a NATS. The default USAGE uses the subjects usage.v1.*; another name N uses n.usage.v1.* (lower-cased).',
      pattern: namePattern,
      default: 'USAGE',
    }),
    USAGE_STREAM_REPLICAS: Type.Integer({
      description:
        'Servers that keep each usage event (edge and metering, the same on both): 1 on one NATS server, 3 on a NATS cluster, so that an acknowledged event survives the loss of a server and its disk.',
      minimum: 1,
      maximum: 5,
      default: 1,
    }),
    USAGE_STREAM_MAX_AGE_HOURS: Type.Integer({
      description:
        'How long the usage stream keeps an event (hours; edge and metering, the same on both): the window to re-meter after a metering outage or a lost Redis. Applied to an existing stream at start.',
      minimum: 1,
      maximum: 8_760,
      default: 72,
    }),
    USAGE_STREAM_MAX_BYTES: Type.Integer({
      description:
        "Most bytes the usage stream holds on each NATS server (edge and metering, the same on both); when full it refuses new events (the edges hold them and retry) rather than deleting unmetered ones. Must fit under NATS's max_file_store, which reserves it. Applied to an existing stream at start; see deploy/README.md for sizing.",
      minimum: 1024,
      default: 1_073_741_824,
    }),
  };
}

/** The levels of pino, the services' logger. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** LOG_LEVEL, one of pino's levels: auth and metering. */
export function logLevelVariable() {
  return {
    LOG_LEVEL: Type.Unsafe<(typeof LOG_LEVELS)[number]>({
      description: 'pino log level: fatal, error, warn, info, debug, trace, silent.',
      type: 'string',
      enum: LOG_LEVELS,
      default: 'info',
    }),
  };
}

/** CONFIG_RELOAD_INTERVAL_MS: the services that read the catalog or the plans (router, executor, metering, auth). */
export function configReloadVariable() {
  return {
    CONFIG_RELOAD_INTERVAL_MS: Type.Integer({
      description:
        'Reload the catalog (and auth its plans) when the file changes, without a restart: the file is watched and also read every this many ms in case a change event is missed; an invalid file is logged and the one in use kept. 0 = read once at start, never reloaded.',
      minimum: 0,
      default: 2_000,
    }),
  };
}

/**
 * GRPC_MAX_CONNECTION_AGE_MS and GRPC_MAX_CONNECTION_AGE_GRACE_MS: every gRPC server (auth, router,
 * executor, metering). The defaults are @gateway/grpc's MAX_CONNECTION_AGE_MS and
 * MAX_CONNECTION_AGE_GRACE_MS, which this package does not depend on.
 */
export function grpcConnectionAgeVariables() {
  return {
    GRPC_MAX_CONNECTION_AGE_MS: Type.Integer({
      description:
        "After about this long (±10%) each connection to the service's gRPC server is asked to go away (HTTP/2 GOAWAY), so that clients reaching it through a fixed address (a ClusterIP, an L4 load balancer) reconnect and spread over replicas added since; its calls carry on (ms).",
      minimum: 1_000,
      default: 120_000,
    }),
    GRPC_MAX_CONNECTION_AGE_GRACE_MS: Type.Integer({
      description:
        'How long a connection asked to go away may still carry the calls it has before they are cut (ms): longer than the longest call, and than the call streams take to move (their age, a few minutes at most).',
      minimum: 1_000,
      default: 1_800_000,
    }),
  };
}

/**
 * MCP_CREDENTIALS_KEY and MCP_OAUTH_REDIRECT_URL: per-key OAuth to upstream MCP servers
 * (@gateway/mcp-oauth), read alike by whoever starts a flow (the MCP service) and whoever takes
 * its callback, since both seal and open the same pending authorizations and tokens.
 */
export function mcpCredentialsVariables() {
  return {
    MCP_CREDENTIALS_KEY: Type.String({
      description:
        "The key (32 bytes, base64) sealing each gateway key's OAuth tokens for upstream MCP servers in Redis (AES-256-GCM); the same on every replica. Empty: MCP servers that need OAuth are refused. Changing it makes every user sign in again. Generate one with `openssl rand -base64 32`.",
      pattern: '^([A-Za-z0-9+/]{43}=)?$',
      default: '',
    }),
    MCP_OAUTH_REDIRECT_URL: Type.String({
      description:
        "The gateway's public OAuth callback for upstream MCP servers, ending in /mcp/oauth/callback (https://gateway.example.com/mcp/oauth/callback): where their authorization servers send each user back.",
      pattern: '^(https?://[^/?#]+/(.*/)?mcp/oauth/callback)?$',
      default: '',
    }),
  };
}
