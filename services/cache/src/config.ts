/** The cache's configuration: every variable it reads, with its description and default. */
import { grpcConnectionAgeVariables, logLevelVariable, redisVariables, Type, configLoader, type ConfigOf } from '@gateway/config';
import { REDIS_URL_PATTERN } from '@gateway/redis';

/** Every environment variable of the cache service; .env.example documents each. */
export const CacheConfigSchema = Type.Object({
  CACHE_LISTEN_ADDR: Type.String({
    description: "Where the cache's gRPC server (gateway.cache.v1.CacheService and grpc.health.v1) listens.",
    minLength: 1,
    default: '0.0.0.0:50058',
  }),
  CACHE_METRICS_PORT: Type.Integer({ description: "Port of the cache's /metrics, /healthz and /readyz.", minimum: 0, maximum: 65535, default: 9108 }),
  REDIS_URL: redisVariables(REDIS_URL_PATTERN).REDIS_URL,
  CACHE_REDIS_URL: Type.String({
    description:
      "The Redis of the cache's entries (same forms as REDIS_URL), never REDIS_URL's: bound it by bytes with an evicting policy (`maxmemory` and `maxmemory-policy allkeys-lru`), allowed here and only here, since losing an entry loses nothing but a hit. The cache's settings and purges live in REDIS_URL's, which never evicts.",
    pattern: REDIS_URL_PATTERN,
    default: 'redis://127.0.0.1:6380',
  }),
  CACHE_REDIS_PREFIX: Type.String({
    description:
      "Prefix of every key the cache writes, in both Redis servers (its settings and purges in REDIS_URL's, its entries in CACHE_REDIS_URL's), so environments can share them.",
    pattern: '^[A-Za-z0-9:_-]*$',
    default: 'cache:',
  }),
  CACHE_MAX_ENTRY_BYTES: Type.Integer({
    description:
      'The largest answer kept, in bytes as stored (an embeddings answer of many vectors, a long completion); a larger one is not kept, and its request stays a miss.',
    minimum: 1_024,
    maximum: 64 * 1024 * 1024,
    default: 1_048_576,
  }),
  CACHE_SEMANTIC_MAX_BYTES: Type.Integer({
    description:
      "The most memory each replica's semantic index (the kept questions' vectors it searches) takes, in bytes as estimated (the vectors, their bookkeeping, the HNSW index of a large group): past it the oldest vectors go first, and their questions are exact-only misses. The vectors themselves live in CACHE_REDIS_URL's Redis with their entries, so every replica finds them and a restarted one reads them again.",
    minimum: 1_048_576,
    maximum: 68_719_476_736,
    default: 268_435_456,
  }),
  CACHE_AUDIT_PREFIX: Type.String({
    description:
      "The prefix of auth's Redis keys (auth's AUTH_REDIS_PREFIX) on REDIS_URL's Redis: every settings change and purge is added to the audit trail auth keeps there (/admin/v1/audit), with its actor. Empty: they are only logged.",
    pattern: '^[A-Za-z0-9:_-]*$',
    default: 'auth:',
  }),
  CACHE_RELOAD_INTERVAL_MS: Type.Integer({
    description:
      'How often each replica looks for a change of the settings and purges in Redis (ms): one made through any replica is applied, and pushed to the edges watching this one, within this.',
    minimum: 50,
    maximum: 60_000,
    default: 250,
  }),
  CACHE_SHUTDOWN_GRACE_MS: Type.Integer({
    description: "How long the cache's calls in flight may take to finish after SIGTERM (ms).",
    minimum: 0,
    default: 5_000,
  }),
  CACHE_SHUTDOWN_DELAY_MS: Type.Integer({
    description:
      'How long the cache keeps serving after SIGTERM, reporting not-ready, before it stops accepting (ms): the time the endpoint removal takes to reach every edge. 0 = stop accepting at once.',
    minimum: 0,
    maximum: 600_000,
    default: 0,
  }),
  ...grpcConnectionAgeVariables(),
  ...logLevelVariable(),
});

/** The cache's configuration, frozen. */
export type CacheConfig = ConfigOf<typeof CacheConfigSchema>;

/** Parses the environment; throws a ConfigError naming each bad variable. Only main.ts passes process.env. */
export const loadCacheConfig = configLoader(CacheConfigSchema);
