import { GatewayError, GrpcStatus, unary } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import type { AuthServiceHandlers, CheckKeyRequestOutput, CheckKeyResponse, CreateKeyRequestOutput, CreateKeyResponse, KeyInfo, ListKeysResponse, RevokeKeyRequestOutput } from '@gateway/proto';
import { isWellFormedSecret } from './key-secret.js';
import { KeyExistsError, type KeyStore, type StoredKey } from './key-store.js';
import { fullLimitState, planFromProto, planToProto, type PlanTable } from './plans.js';

/** What the auth service needs. */
export interface AuthServiceDependencies {
  keys: KeyStore;
  plans: PlanTable;
  logger: Logger;
  /** Where the service's metrics go; omitted in tests that do not look at them. */
  registry?: prometheus.Registry;
}

/** The message of every invalid-key denial: it never echoes the key. */
export const INVALID_KEY_MESSAGE = 'Incorrect API key provided. You can find your API key in your account settings.';
/** The message of a revoked-key denial. */
export const REVOKED_KEY_MESSAGE = 'This API key has been revoked.';

/** The public facts of a stored key as a KeyInfo message. */
export function toKeyInfo(key: StoredKey): KeyInfo {
  return { key_id: key.key_id, plan: planToProto(key.plan), name: key.name, created_at_ms: key.created_at_ms, last_used_at_ms: key.last_used_at_ms, revoked: key.revoked };
}

/**
 * The AuthService handlers. CheckKey answers a decision for every key it can look up; a key store
 * failure is an UNAVAILABLE error (never an allow), so the edge refuses the request with a 503.
 */
export function createAuthHandlers(dependencies: AuthServiceDependencies): AuthServiceHandlers {
  const { keys, plans, logger } = dependencies;
  const decisions = new prometheus.Counter({ name: 'gateway_auth_decisions_total', help: 'CheckKey decisions, by decision.', labelNames: ['decision'], registers: dependencies.registry ? [dependencies.registry] : [] });
  const storeErrors = new prometheus.Counter({ name: 'gateway_auth_store_errors_total', help: 'Key store (Redis) operations that failed.', registers: dependencies.registry ? [dependencies.registry] : [] });
  const report = (error: unknown, method: string) => logger.error({ err: error, method }, 'auth handler failed');

  /** Runs a key store operation, turning a Redis failure into UNAVAILABLE with the cause logged. */
  async function store<T>(operation: () => Promise<T>, message: string, requestId?: string): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof KeyExistsError || error instanceof GatewayError) throw error;
      storeErrors.inc();
      logger.error({ err: { message: (error as Error).message }, request_id: requestId }, 'key store unavailable');
      throw new GatewayError(GrpcStatus.UNAVAILABLE, 'auth_unavailable', message, { retryable: true, cause: error });
    }
  }

  function deny(message: string): CheckKeyResponse {
    decisions.inc({ decision: 'DECISION_DENY_INVALID_KEY' });
    return { decision: 'DECISION_DENY_INVALID_KEY', message };
  }

  async function checkKey(request: CheckKeyRequestOutput): Promise<CheckKeyResponse> {
    const secret = request.api_key ?? '';
    if (!isWellFormedSecret(secret)) return deny(INVALID_KEY_MESSAGE);
    const found = await store(() => keys.findBySecret(secret), 'The key service cannot decide right now.', request.request_id);
    if (!found) return deny(INVALID_KEY_MESSAGE);
    if (found.key.revoked) return deny(REVOKED_KEY_MESSAGE);
    keys.recordUse(found, (error) => logger.warn({ err: { message: (error as Error).message }, key_id: found.key.key_id }, 'last use not recorded'));
    const limits = plans[found.key.plan];
    decisions.inc({ decision: 'DECISION_ALLOW' });
    return {
      decision: 'DECISION_ALLOW',
      key_id: found.key.key_id,
      plan: planToProto(found.key.plan),
      requests: fullLimitState(limits.requests_per_minute),
      tokens: fullLimitState(limits.tokens_per_minute),
    };
  }

  async function createKey(request: CreateKeyRequestOutput): Promise<CreateKeyResponse> {
    const plan = planFromProto(request.plan);
    if (!plan) throw new GatewayError(GrpcStatus.INVALID_ARGUMENT, 'invalid_request', 'A plan is required: PLAN_STARTER, PLAN_PRO or PLAN_ENTERPRISE.', { param: 'plan' });
    const secret = request.secret || undefined;
    if (secret !== undefined && !isWellFormedSecret(secret)) {
      throw new GatewayError(GrpcStatus.INVALID_ARGUMENT, 'invalid_request', 'A secret must be "br-" followed by at least 32 letters or digits.', { param: 'secret' });
    }
    try {
      const created = await store(() => keys.create({ plan, name: request.name ?? '', secret }), 'The key store is unavailable.');
      logger.info({ key_id: created.key.key_id, plan }, 'key created');
      return { key: toKeyInfo(created.key), secret: created.secret };
    } catch (error) {
      if (error instanceof KeyExistsError) throw new GatewayError(GrpcStatus.ALREADY_EXISTS, 'key_exists', 'A key with this secret already exists.', { param: 'secret' });
      throw error;
    }
  }

  async function listKeys(): Promise<ListKeysResponse> {
    const all = await store(() => keys.list(), 'The key store is unavailable.');
    return { keys: all.map(toKeyInfo) };
  }

  async function revokeKey(request: RevokeKeyRequestOutput): Promise<KeyInfo> {
    const keyId = request.key_id ?? '';
    const revoked = keyId ? await store(() => keys.revoke(keyId), 'The key store is unavailable.') : undefined;
    if (!revoked) throw new GatewayError(GrpcStatus.NOT_FOUND, 'key_not_found', 'No key has this id.', { param: 'key_id' });
    logger.info({ key_id: revoked.key_id }, 'key revoked');
    return toKeyInfo(revoked);
  }

  return {
    CheckKey: unary(checkKey, 'CheckKey', report),
    CreateKey: unary(createKey, 'CreateKey', report),
    ListKeys: unary(listKeys, 'ListKeys', report),
    RevokeKey: unary(revokeKey, 'RevokeKey', report),
  };
}
