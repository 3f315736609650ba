/**
 * The guard's dependencies: Redis (its policies) and the settings of its server from the config,
 * each resource opened with its close.
 */
import { connectionAgeOf } from '@gateway/grpc';
import type { RunContext } from '@gateway/observability';
import { closeRedis, createRedis } from '@gateway/redis';
import type { GuardDependencies } from './app.js';
import type { GuardConfig } from './config.js';

/** Opens Redis; the rest comes from the config. */
export function openGuardDependencies({ config, logger, registry, open }: RunContext<GuardConfig>): GuardDependencies {
  return {
    redis: open(createRedis(config.REDIS_URL, logger), closeRedis),
    logger,
    registry,
    prefix: config.GUARD_REDIS_PREFIX,
    secretsKey: config.GUARD_SECRETS_KEY,
    reloadIntervalMs: config.GUARD_RELOAD_INTERVAL_MS,
    defaults: { windowTokens: config.GUARD_WINDOW_TOKENS, windowMs: config.GUARD_WINDOW_MS, checkDeadlineMs: config.GUARD_CHECK_DEADLINE_MS },
    maxChars: config.GUARD_MAX_TEXT_CHARS,
    connectionAge: connectionAgeOf(config),
  };
}
