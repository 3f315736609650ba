import { connectionAgeOptions, createGatewayServer, type ConnectionAge, type GatewayServer, withShutdownSteps } from '@gateway/grpc';
import { AuditLog } from '@gateway/keyspace';
import type { Logger } from '@gateway/logger';
import type { prometheus } from '@gateway/observability';
import { loadGatewayGrpc } from '@gateway/proto';
import { type RedisClient, SecretCipher } from '@gateway/redis';
import { createGuardMetrics } from './guard-metrics.js';
import { createGuardService } from './guard-service.js';
import { CompiledPolicies } from './policies/compiled-policies.js';
import type { PolicyDefaults } from './policies/policy.js';
import { PolicyStore } from './policies/policy-store.js';

/** What the guard is wired from; main.ts builds these from the config, tests build their own. */
export interface GuardDependencies {
  redis: RedisClient;
  logger: Logger;
  registry?: prometheus.Registry;
  /** GUARD_REDIS_PREFIX. */
  prefix: string;
  /** GUARD_SECRETS_KEY: base64 of 32 bytes, or '' for none. */
  secretsKey: string;
  /** GUARD_AUDIT_PREFIX: auth's prefix, whose audit trail gets each policy change; '' for none. */
  auditPrefix?: string;
  reloadIntervalMs: number;
  defaults: PolicyDefaults;
  /** GUARD_MAX_TEXT_CHARS. */
  maxChars: number;
  connectionAge?: ConnectionAge;
}

/** The unstarted guard: its gRPC server, and the policy store to start (and stop) beside it. */
export interface GuardApp {
  server: GatewayServer;
  store: PolicyStore;
}

/**
 * The guard's unstarted gRPC server (GuardService and grpc.health.v1) with its policy store. Its
 * shutdown first ends the open WatchPolicies streams (the edges reconnect to another replica), then
 * drains the Check calls in flight within the grace period, then stops polling Redis.
 */
export function createServer(deps: GuardDependencies): GuardApp {
  const store = new PolicyStore(deps.redis, { prefix: deps.prefix, intervalMs: deps.reloadIntervalMs, logger: deps.logger });
  const cipher = new SecretCipher(deps.secretsKey, 'GUARD_SECRETS_KEY');
  const service = createGuardService({
    store,
    compiled: new CompiledPolicies(cipher, deps.defaults, deps.logger),
    cipher,
    defaults: deps.defaults,
    maxChars: deps.maxChars,
    metrics: createGuardMetrics(deps.registry),
    logger: deps.logger,
    // auth trims the trail by its own retention; the guard only adds to it.
    ...(deps.auditPrefix && { audit: new AuditLog(deps.redis, { prefix: deps.auditPrefix, trims: false }) }),
  });
  const server = createGatewayServer(
    [
      {
        name: 'gateway.guard.v1.GuardService',
        definition: loadGatewayGrpc().gateway.guard.v1.GuardService.service,
        handlers: service.handlers,
      },
    ],
    connectionAgeOptions(deps.connectionAge),
  );
  return {
    store,
    server: withShutdownSteps(server, { before: () => service.endWatches(), after: () => store.stop() }),
  };
}
