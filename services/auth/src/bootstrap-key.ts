import type { Logger } from '@gateway/logger';
import { hashSecret } from './key-secret.js';
import { KeyExistsError, type KeyStore, type StoredKey } from './key-store.js';
import type { PlanName } from './plans.js';

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
