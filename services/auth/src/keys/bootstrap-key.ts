import type { Logger } from '@gateway/logger';
import type { PlanName } from '@gateway/proto';
import type { RedisClient } from '@gateway/redis';
import { hashSecret } from '../shared/ids.js';
import { KeyExistsError } from '../shared/input-error.js';
import type { KeyStore } from './key-store.js';
import type { StoredKey } from './stored-key.js';
import { startUpRetry } from '../start-up-retry.js';

/** How long an attempt waits for a disconnected Redis to become ready before it tries anyway. */
const READY_WAIT_MS = 2_000;

/**
 * Makes sure the bootstrap key exists with the configured plan, so a fresh deployment has one
 * working key. Idempotent: an existing key keeps its id and gets the configured plan; a revoked
 * one stays revoked (revoking it is how an operator retires it). Logs the key id only.
 */
export async function ensureBootstrapKey(keys: KeyStore, secret: string, plan: PlanName, logger: Logger): Promise<StoredKey> {
  try {
    const { key } = await keys.create({ plan, name: 'bootstrap', secret });
    logger.info({ key_id: key.key_id, plan }, 'bootstrap key created');
    return key;
  } catch (error) {
    if (!(error instanceof KeyExistsError)) throw error;
  }
  const existing = await keys.findBySecret(secret);
  if (!existing) throw new Error(`bootstrap key ${hashSecret(secret).slice(0, 8)}… exists but cannot be read`);
  const { key } = existing;
  if (key.revoked) {
    logger.warn({ key_id: key.key_id }, 'bootstrap key is revoked; leaving it revoked');
    return key;
  }
  if (key.plan !== plan) {
    const updated = await keys.setPlan(key.key_id, plan);
    logger.info({ key_id: key.key_id, from: key.plan, plan }, 'bootstrap key plan updated');
    return updated ?? key;
  }
  logger.info({ key_id: key.key_id, plan }, 'bootstrap key present');
  return key;
}

/**
 * Ensures the bootstrap key at start, retrying until Redis answers (250 ms more after each failure,
 * at most 2 s): the key must exist before the first CheckKey, so auth waits for Redis rather than
 * serve denials for the one key a fresh deployment has. Commands fail at once while Redis is
 * disconnected (no offline queue), so each attempt first gives the connection up to 2 s to become
 * ready.
 */
export function ensureBootstrapKeyOnceReachable(redis: RedisClient, keys: KeyStore, secret: string, plan: PlanName, logger: Logger): Promise<StoredKey> {
  return startUpRetry(logger, { stepMs: 250, maxMs: 2_000, message: 'bootstrap key not ensured yet; retrying' }).execute(async () => {
    await readyOrAfter(redis, READY_WAIT_MS);
    return ensureBootstrapKey(keys, secret, plan, logger);
  });
}

/** Resolves once the client is ready, or after waitMs (the attempt then fails as Redis is still down). */
function readyOrAfter(redis: RedisClient, waitMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      // Removed on the timeout too: an outage of minutes would otherwise pile up a listener per attempt.
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, waitMs);
    redis.once('ready', done);
  });
}
