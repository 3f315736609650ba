/**
 * Authenticated encryption of what the gateway keeps of a user's upstream credentials: AES-256-GCM
 * (node:crypto, OpenSSL's implementation) with a random 96-bit IV per write and associated data
 * naming what the blob belongs to (the gateway key id and the server id of a token). GCM's tag
 * covers the associated data, so a blob copied under another key or server, or altered by one bit,
 * fails to open instead of decrypting into someone else's credentials.
 *
 * A blob is `v1.<base64url(iv | tag | ciphertext)>`: the version names the scheme so that a later
 * one can sit beside it.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1.';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The length of the encryption key: AES-256. */
export const CREDENTIALS_KEY_BYTES = 32;

/** Thrown when a blob does not open: altered, stored under other associated data, or sealed with another key. */
export class SealedBoxError extends Error {
  constructor() {
    super('stored credentials do not decrypt with this key for this owner');
    this.name = 'SealedBoxError';
  }
}

/**
 * The encryption key from its base64 form (MCP_CREDENTIALS_KEY): exactly 32 bytes, e.g. from
 * `openssl rand -base64 32`. Throws naming the variable, never echoing its value.
 */
export function credentialsKeyFromBase64(value: string, variable = 'MCP_CREDENTIALS_KEY'): Buffer {
  const trimmed = value.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) throw new Error(`${variable} must be base64`);
  const key = Buffer.from(trimmed, 'base64');
  if (key.length !== CREDENTIALS_KEY_BYTES)
    throw new Error(`${variable} must decode to ${CREDENTIALS_KEY_BYTES} bytes, not ${key.length} (openssl rand -base64 32)`);
  return key;
}

/** Checks an encryption key's length; throws without echoing it. */
export function assertCredentialsKey(key: Buffer): void {
  if (!Buffer.isBuffer(key) || key.length !== CREDENTIALS_KEY_BYTES) throw new Error(`the credentials encryption key must be ${CREDENTIALS_KEY_BYTES} bytes`);
}

/** Encrypts `plaintext`, binding it to `associatedData`. */
export function seal(key: Buffer, plaintext: string, associatedData: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return VERSION + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url');
}

/** Decrypts a blob sealed with the same key and associated data; throws SealedBoxError otherwise. */
export function open(key: Buffer, blob: string, associatedData: string): string {
  if (!blob.startsWith(VERSION)) throw new SealedBoxError();
  const bytes = Buffer.from(blob.slice(VERSION.length), 'base64url');
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new SealedBoxError();
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new SealedBoxError();
  }
}

/** The associated data of a value owned by a list of parts (unambiguous whatever the parts hold). */
export function ownerOf(...parts: string[]): string {
  return JSON.stringify(parts);
}
