import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretCipher } from './secret-cipher.js';

const KEY = randomBytes(32).toString('base64');

describe('SecretCipher', () => {
  it('opens what it sealed, and the sealed text holds no header value', () => {
    const cipher = new SecretCipher(KEY, 'MCP_SECRETS_KEY');
    const sealed = cipher.seal({ 'x-api-key': 'secret-value-123' });
    expect(sealed).not.toContain('secret-value-123');
    expect(cipher.open(sealed)).toEqual({ 'x-api-key': 'secret-value-123' });
    // A fresh IV each time: the same headers seal differently.
    expect(cipher.seal({ 'x-api-key': 'secret-value-123' })).not.toBe(sealed);
  });

  it('refuses a value sealed with another key, or altered', () => {
    const sealed = new SecretCipher(KEY, 'MCP_SECRETS_KEY').seal({ authorization: 'Bearer abc' });
    expect(() => new SecretCipher(randomBytes(32).toString('base64'), 'MCP_SECRETS_KEY').open(sealed)).toThrow();
    const bytes = Buffer.from(sealed.slice(3), 'base64');
    bytes[bytes.length - 1]! ^= 1;
    expect(() => new SecretCipher(KEY, 'MCP_SECRETS_KEY').open(`v1.${bytes.toString('base64')}`)).toThrow();
  });

  it('without a key, seals and opens nothing', () => {
    const cipher = new SecretCipher('', 'MCP_SECRETS_KEY');
    expect(cipher.configured).toBe(false);
    expect(() => cipher.seal({ a: 'b' })).toThrow(/MCP_SECRETS_KEY/);
  });
});
