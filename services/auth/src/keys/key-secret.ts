import { MAX_SECRET_LENGTH, randomBase62 } from '../shared/ids.js';

/** What a well-formed secret looks like; anything else is refused without a Redis lookup. */
export const SECRET_PATTERN = /^br-[A-Za-z0-9]{32,}$/;

/** A new secret: `br-` and 40 base62 characters (238 bits). */
export function generateSecret(): string {
  return `br-${randomBase62(40)}`;
}

/** A new public key id: `key_` and 16 base62 characters; safe to log and to label usage with. */
export function generateKeyId(): string {
  return `key_${randomBase62(16)}`;
}

/** Whether text has the shape of a secret. */
export function isWellFormedSecret(secret: string): boolean {
  return secret.length <= MAX_SECRET_LENGTH && SECRET_PATTERN.test(secret);
}
