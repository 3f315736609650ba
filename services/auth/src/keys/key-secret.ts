import { createHash, randomBytes } from 'node:crypto';

/** What a well-formed secret looks like; anything else is refused without a Redis lookup. */
export const SECRET_PATTERN = /^br-[A-Za-z0-9]{32,}$/;

/** The longest secret worth hashing: longer input is malformed, never a lookup. */
export const MAX_SECRET_LENGTH = 256;

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * Random base62 text from crypto.randomBytes. Bytes of 248 and above are skipped so every
 * character is equally likely (248 = 4 x 62): no modulo bias in a secret.
 */
export function randomBase62(length: number): string {
  let text = '';
  while (text.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) text += BASE62[byte % 62];
      if (text.length === length) break;
    }
  }
  return text;
}

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

/**
 * The SHA-256 hex of a secret: the only form a secret is stored in. A fast hash is enough
 * because secrets are 238 random bits, not guessable passwords.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}
