/**
 * The ids and secrets keys, teams and admin tokens share: random base62 text, the hash a secret is
 * stored as, and what a public id looks like.
 */
import { createHash, randomBytes } from 'node:crypto';

/** The longest secret worth hashing: longer input is malformed, never a lookup. */
export const MAX_SECRET_LENGTH = 256;

/** What a public key id looks like. */
export const KEY_ID_PATTERN = /^key_[A-Za-z0-9]{16}$/;
/** What a public team id looks like. */
export const TEAM_ID_PATTERN = /^team_[A-Za-z0-9]{16}$/;

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

/**
 * The SHA-256 hex of a secret: the only form a secret is stored in. A fast hash is enough
 * because secrets are 238 random bits, not guessable passwords.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}
