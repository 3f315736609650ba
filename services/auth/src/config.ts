import {
  authPrefixVariable,
  logLevelVariable,
  redisVariables,
  Type,
  configReloadVariable,
  grpcConnectionAgeVariables,
  configLoader,
  type ConfigOf,
} from '@gateway/config';
import { REDIS_URL_PATTERN } from '@gateway/redis';
import { DEFAULT_PLANS_PATH, PLAN_NAMES, type PlanName } from './quota/plans.js';

/** Every environment variable of the auth service; .env.example documents each. */
export const AuthConfigSchema = Type.Object({
  AUTH_LISTEN_ADDR: Type.String({ description: "Address auth's gRPC server listens on.", default: '0.0.0.0:50051' }),
  AUTH_METRICS_PORT: Type.Integer({ description: "Port of auth's /metrics, /healthz and /readyz.", minimum: 0, maximum: 65535, default: 9101 }),
  ...redisVariables(REDIS_URL_PATTERN),
  ...authPrefixVariable(),
  AUTH_QUOTA_WINDOW_SECONDS: Type.Integer({
    description:
      "Length of the quota window in seconds: plans' requests and tokens per minute count over it (60; a drill may shorten it, say to 2, instead of waiting out a minute).",
    minimum: 1,
    maximum: 3_600,
    default: 60,
  }),
  AUTH_PLANS_PATH: Type.String({
    description: 'Plans file (YAML); unset = services/auth/plans.yaml.',
    examples: ['/etc/gateway/plans.yaml'],
    minLength: 1,
    default: DEFAULT_PLANS_PATH,
  }),
  ...configReloadVariable(),
  ...grpcConnectionAgeVariables(),
  ...logLevelVariable(),
  GATEWAY_BOOTSTRAP_KEY: Type.String({
    description:
      'An API key (br- and at least 32 letters or digits) auth creates at start if missing (idempotent). Empty: none (so an .env file can list it without setting it); scripts/start.sh then generates one into .run/bootstrap-key.',
    pattern: '^(br-[A-Za-z0-9]{32,})?$',
    default: '',
  }),
  GATEWAY_BOOTSTRAP_PLAN: Type.Unsafe<PlanName>({
    description: "The bootstrap key's plan: starter, pro or enterprise (auth's default: starter; scripts/start.sh's: pro).",
    type: 'string',
    enum: PLAN_NAMES,
    default: 'starter',
  }),
  AUTH_AUDIT_RETENTION_DAYS: Type.Integer({
    description: 'Days the audit trail of admin changes (keys, admin tokens) is kept; older entries are trimmed as new ones are written.',
    minimum: 1,
    maximum: 3_650,
    default: 90,
  }),
  AUTH_SHUTDOWN_GRACE_MS: Type.Integer({ description: "How long auth's in-flight calls may take to finish after SIGTERM (ms).", minimum: 0, default: 5_000 }),
});

/** The auth service's configuration, frozen. */
export type AuthConfig = ConfigOf<typeof AuthConfigSchema>;

/** Parses the environment; throws a ConfigError naming each bad variable. */
export const loadAuthConfig = configLoader(AuthConfigSchema);
