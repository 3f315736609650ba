/**
 * Auth's dependencies, opened in order with their closes: the plans file, Redis (keys, teams,
 * quota windows, admin tokens, audit), the stores over it, and tracing. What main.ts hands to
 * createServer, with the Redis client its readiness reads.
 */
import { connectionAgeOf } from '@gateway/grpc';
import { loadScripts } from '@gateway/keyspace';
import type { RunContext } from '@gateway/observability';
import { closeRedis, createRedis, guardEvictionPolicy, type RedisClient, RedisMemoryWatch } from '@gateway/redis';
import { AdminTokenStore } from './admin-access/admin-token-store.js';
import type { AuthServerDependencies } from './app.js';
import { AuditLog } from '@gateway/keyspace';
import type { AuthConfig } from './config.js';
import { ensureBootstrapKeyOnceReachable } from './keys/bootstrap-key.js';
import { KeyStore } from './keys/key-store.js';
import { parsePlans } from './quota/plans.js';
import { QuotaLimiter } from './quota/quota-limiter.js';
import { startUpRetry } from './start-up-retry.js';
import { TeamStore } from './teams/team-store.js';

/** Opens auth's dependencies; an evicting Redis is refused (the process does not start). */
export async function openAuthDependencies({
  config,
  logger,
  registry,
  open,
  tracing,
  reloadableFile,
}: RunContext<AuthConfig>): Promise<AuthServerDependencies & { redis: RedisClient }> {
  // Reloaded when the file changes: each decision reads the plans in use, so a limit or budget
  // changed in the file applies from the next request, on every replica that sees the file.
  const plans = open(reloadableFile({ path: config.AUTH_PLANS_PATH, name: 'plans', parse: parsePlans }).start(), (file) => file.close());
  // Each quota decision is one script call that a request waits on: without auto-pipelining its
  // p99 at 1,000 decisions/s fell from 1.3 to 0.4-0.5 ms in pnpm bench auth (one run per variant).
  const redis = open(createRedis(config.REDIS_URL, logger, { autoPipelining: false }), closeRedis);
  // Key changes that wait for replicas (WAIT holds its connection) get a connection of their own,
  // so that decisions never wait behind one.
  const writer = config.REDIS_WAIT_REPLICAS > 0 ? open(createRedis(config.REDIS_URL, logger), closeRedis) : redis;
  // Keys, limit windows and budgets must never be evicted: an evicting Redis is refused at start.
  await guardEvictionPolicy(redis, { allowEviction: config.REDIS_ALLOW_EVICTION, logger });
  const keys = new KeyStore(redis, { prefix: config.AUTH_REDIS_PREFIX, replicas: config.REDIS_WAIT_REPLICAS, logger, writer });
  const teams = new TeamStore(writer, { prefix: config.AUTH_REDIS_PREFIX });
  // A full Redis (over maxmemory) refuses new reservations (503) rather than have them written past it.
  const memory = open(new RedisMemoryWatch(redis, { logger }).start(), (watch) => watch.stop());
  const windowMs = config.AUTH_QUOTA_WINDOW_SECONDS * 1_000;
  const limiter = new QuotaLimiter(redis, plans, { prefix: config.AUTH_REDIS_PREFIX, keys, windowMs, memory });
  // Every script loaded before the first decisions (in the background, retried: a decision sends a
  // script Redis lacks whole, so this only keeps that off the first requests).
  void startUpRetry(logger, { stepMs: 500, maxMs: 5_000, message: 'loading the Redis scripts failed; retrying' }).execute(() => loadScripts(redis));
  // Keys of the earlier layout move to this one (in the background: a key met before it is done
  // moves when met), retried until Redis lets them.
  void startUpRetry(logger, { stepMs: 500, maxMs: 5_000, message: 'moving keys to the current Redis layout failed; retrying' })
    .execute(() => keys.migrateEarlierLayout())
    .then((moved) => {
      if (moved > 0) logger.info({ keys: moved }, 'keys moved to the current Redis layout');
    });
  if (config.GATEWAY_BOOTSTRAP_KEY) await ensureBootstrapKeyOnceReachable(redis, keys, config.GATEWAY_BOOTSTRAP_KEY, config.GATEWAY_BOOTSTRAP_PLAN, logger);
  return {
    redis,
    keys,
    teams,
    limiter,
    plans,
    logger,
    registry,
    tracing: tracing(),
    adminTokens: new AdminTokenStore(writer, { prefix: config.AUTH_REDIS_PREFIX, replicas: config.REDIS_WAIT_REPLICAS }),
    audit: new AuditLog(writer, { prefix: config.AUTH_REDIS_PREFIX, retentionDays: config.AUTH_AUDIT_RETENTION_DAYS }),
    connectionAge: connectionAgeOf(config),
  };
}
