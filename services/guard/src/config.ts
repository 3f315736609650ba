import { grpcConnectionAgeVariables, logLevelVariable, redisVariables, Type, configLoader, type ConfigOf } from '@gateway/config';
import { REDIS_URL_PATTERN } from '@gateway/redis';

/** Every environment variable of the guard service; .env.example documents each. */
export const GuardConfigSchema = Type.Object({
  GUARD_LISTEN_ADDR: Type.String({
    description: "Where the guard's gRPC server (gateway.guard.v1.GuardService and grpc.health.v1) listens.",
    minLength: 1,
    default: '0.0.0.0:50056',
  }),
  GUARD_METRICS_PORT: Type.Integer({ description: "Port of the guard's /metrics, /healthz and /readyz.", minimum: 0, maximum: 65535, default: 9106 }),
  REDIS_URL: redisVariables(REDIS_URL_PATTERN).REDIS_URL,
  GUARD_REDIS_PREFIX: Type.String({
    description: 'Prefix of every Redis key the guard writes (its policies), so environments can share one Redis.',
    pattern: '^[A-Za-z0-9:_-]*$',
    default: 'guard:',
  }),
  GUARD_SECRETS_KEY: Type.String({
    description:
      'The key (32 bytes, base64) the credentials of outside checks (moderation and content-safety API keys) are encrypted with in Redis (AES-256-GCM); the same on every replica. Empty: a policy whose outside check carries a credential is refused. Generate one with `openssl rand -base64 32`.',
    pattern: '^([A-Za-z0-9+/]{43}=)?$',
    default: '',
  }),
  GUARD_RELOAD_INTERVAL_MS: Type.Integer({
    description:
      'How often each replica looks for a change of the policies in Redis (ms): a policy put or removed through any replica is applied, and pushed to the edges watching this one, within this.',
    minimum: 50,
    maximum: 60_000,
    default: 250,
  }),
  GUARD_WINDOW_TOKENS: Type.Integer({
    description:
      'The stream hold-back of a policy that sets none, in tokens (about 4 characters a token): the most text an edge keeps unsent while it is checked.',
    minimum: 1,
    maximum: 4_096,
    default: 64,
  }),
  GUARD_WINDOW_MS: Type.Integer({
    description: 'The stream hold-back of a policy that sets none, in ms: the longest a held-back text waits before it is checked and sent.',
    minimum: 10,
    maximum: 10_000,
    default: 250,
  }),
  GUARD_CHECK_DEADLINE_MS: Type.Integer({
    description:
      'How long the built-in checks of one Check call may take (ms), and the deadline of an outside check that sets none; the edge waits the longest deadline of the policies it names plus its own margin.',
    minimum: 10,
    maximum: 60_000,
    default: 200,
  }),
  GUARD_MAX_TEXT_CHARS: Type.Integer({
    description:
      'The most characters (UTF-16 code units) over all texts of one Check call; a larger call is refused with INVALID_ARGUMENT, and the edge applies on_error.',
    minimum: 1_000,
    maximum: 64 * 1024 * 1024,
    default: 4 * 1024 * 1024,
  }),
  GUARD_SHUTDOWN_GRACE_MS: Type.Integer({
    description: "How long the guard's in-flight checks may take to finish after SIGTERM (ms).",
    minimum: 0,
    default: 10_000,
  }),
  GUARD_SHUTDOWN_DELAY_MS: Type.Integer({
    description:
      'How long the guard keeps serving after SIGTERM, reporting not-ready, before it stops accepting (ms): the time the endpoint removal takes to reach every edge. 0 = stop accepting at once.',
    minimum: 0,
    maximum: 600_000,
    default: 0,
  }),
  ...grpcConnectionAgeVariables(),
  ...logLevelVariable(),
});

/** The guard's configuration, frozen. */
export type GuardConfig = ConfigOf<typeof GuardConfigSchema>;

/** Parses the environment; throws a ConfigError naming each bad variable. Only main.ts passes process.env. */
export const loadGuardConfig = configLoader(GuardConfigSchema);
