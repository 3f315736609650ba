/**
 * Seals the static headers of upstream MCP servers (their API keys) for Redis: AES-256-GCM with
 * MCP_SECRETS_KEY and a random 96-bit IV per value, so that a copy of Redis alone reveals no
 * credential, and a tampered value fails to open instead of sending something else upstream.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Encrypts and decrypts header sets with one key. */
export class HeaderCipher {
  private readonly key: Buffer | undefined;

  /** `base64Key`: 32 bytes in base64; '' for none (then nothing can be sealed or opened). */
  constructor(base64Key: string) {
    this.key = base64Key ? Buffer.from(base64Key, 'base64') : undefined;
    if (this.key && this.key.length !== 32) throw new Error('MCP_SECRETS_KEY must be 32 bytes in base64.');
  }

  /** Whether a key is configured. */
  get configured(): boolean {
    return this.key !== undefined;
  }

  /** The headers as `v1.<base64 iv|tag|ciphertext>`. */
  seal(headers: Record<string, string>): string {
    if (!this.key) throw new Error('No MCP_SECRETS_KEY is configured.');
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(headers), 'utf8'), cipher.final()]);
    return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** The headers a sealed value holds; throws when the key is missing or wrong, or the value was altered. */
  open(sealed: string): Record<string, string> {
    if (!this.key) throw new Error('No MCP_SECRETS_KEY is configured.');
    if (!sealed.startsWith('v1.')) throw new Error('Unknown sealed header format.');
    const bytes = Buffer.from(sealed.slice(3), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    return JSON.parse(text) as Record<string, string>;
  }
}
