/**
 * Seals the credentials a service keeps in Redis (the static headers of upstream MCP servers, the
 * API keys of the guard's outside checks): AES-256-GCM with a key from the service's configuration
 * and a random 96-bit IV per value, so that a copy of Redis alone reveals no credential, and a
 * tampered value fails to open instead of sending something else upstream.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Encrypts and decrypts string maps (header sets, a credential) with one key. */
export class SecretCipher {
  private readonly key: Buffer | undefined;

  /**
   * `base64Key`: 32 bytes in base64; '' for none (then nothing can be sealed or opened).
   * `variable`: the configuration variable the key comes from, named in errors (never its value).
   */
  constructor(
    base64Key: string,
    private readonly variable: string,
  ) {
    this.key = base64Key ? Buffer.from(base64Key, 'base64') : undefined;
    if (this.key && this.key.length !== 32) throw new Error(`${variable} must be 32 bytes in base64.`);
  }

  /** Whether a key is configured. */
  get configured(): boolean {
    return this.key !== undefined;
  }

  /** The values as `v1.<base64 iv|tag|ciphertext>`. */
  seal(values: Record<string, string>): string {
    if (!this.key) throw new Error(`No ${this.variable} is configured.`);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(values), 'utf8'), cipher.final()]);
    return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** The values a sealed text holds; throws when the key is missing or wrong, or the text was altered. */
  open(sealed: string): Record<string, string> {
    if (!this.key) throw new Error(`No ${this.variable} is configured.`);
    if (!sealed.startsWith('v1.')) throw new Error('Unknown sealed value format.');
    const bytes = Buffer.from(sealed.slice(3), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    return JSON.parse(text) as Record<string, string>;
  }
}
