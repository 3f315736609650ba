/**
 * The AuthService (proto/gateway/auth/v1/auth.proto), wired from its two groups of RPCs: the quota
 * decision's (CheckKey, SettleUsage, Decide: quota/decision-handlers.ts) and the keys'
 * (CreateKey, ListKeys, GetKey, UpdateKey, RevokeKey: keys/key-handlers.ts). Both run their store
 * operations through one guard, so that a Redis failure is UNAVAILABLE, counted and logged alike.
 */
import { GatewayError } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { metric, NO_TRACING, type prometheus, serviceMetrics, type Tracing } from '@gateway/observability';
import type { AuthServiceHandlers } from '@gateway/proto';
import type { Auditor } from './audit/auditor.js';
import { createKeyHandlers } from './keys/key-handlers.js';
import type { KeyStore } from './keys/key-store.js';
import { KeyExistsError, TeamNotFoundError } from './shared/input-error.js';
import { createDecisionHandlers } from './quota/decision-handlers.js';
import { type QuotaLimiter, ReservationIdError } from './quota/quota-limiter.js';
import { invalidInput, type StoreCall } from './shared/handler-input.js';
import { plansSource, type PlansSource, type PlanTable } from './shared/limits.js';
import type { TeamStore } from './teams/team-store.js';

/** What the auth service needs. */
export interface AuthServiceDependencies {
  keys: KeyStore;
  limiter: QuotaLimiter;
  /** The plans: a fixed table, or a reloaded plans file (each answer reads its `current` table). */
  plans: PlanTable | PlansSource;
  logger: Logger;
  /** Where the service's metrics go; omitted in tests that do not look at them. */
  registry?: prometheus.Registry;
  /** Traces (OTLP), when configured; off by default. */
  tracing?: Tracing;
  /** Records each key change (create, update, revoke) in the audit trail. */
  auditor: Auditor;
  /** The teams, whose MCP tool allow-lists a CheckKey with `mcp` reads; absent: none is read. */
  teams?: Pick<TeamStore, 'get'>;
}

/** The AuthService's handlers, and the drain of its Decide streams on shutdown. */
export interface AuthService {
  handlers: AuthServiceHandlers;
  /** Asks every Decide caller to move to another replica; resolves when their streams ended. */
  drain(patienceMs: number): Promise<void>;
}

/** The AuthService; see the module comment. */
export function createAuthService(dependencies: AuthServiceDependencies): AuthService {
  const { keys, limiter, logger, auditor, teams, registry } = dependencies;
  const { storeErrors } = serviceMetrics(registry, {
    storeErrors: metric.counter('gateway_auth_store_errors_total', 'Key store (Redis) operations that failed.'),
  });
  const report = (error: unknown, method: string) => logger.error({ err: error, method }, 'auth handler failed');

  /** Runs a key store operation, turning a Redis failure into UNAVAILABLE with the cause logged. */
  const store: StoreCall = async (operation, message, requestId) => {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof KeyExistsError || error instanceof TeamNotFoundError || error instanceof GatewayError) throw error;
      if (error instanceof ReservationIdError) throw GatewayError.of('invalid_request', error.message, { param: 'reservation_id' });
      const refusal = invalidInput(error);
      if (refusal) throw refusal;
      storeErrors.inc();
      logger.error({ err: { message: (error as Error).message }, request_id: requestId }, 'key store unavailable');
      throw GatewayError.of('auth_unavailable', message, { retryable: true, cause: error });
    }
  };

  const tracing = dependencies.tracing ?? NO_TRACING;
  const decision = createDecisionHandlers({ limiter, keys, teams, tracing, registry, store, report });
  const keyHandlers = createKeyHandlers({ keys, plans: plansSource(dependencies.plans), logger, auditor, store, report });
  return { handlers: { ...decision.handlers, ...keyHandlers }, drain: decision.drain };
}
