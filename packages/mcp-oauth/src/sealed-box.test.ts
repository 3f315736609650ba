import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { credentialsKeyFromBase64, open, ownerOf, SealedBoxError, seal } from './sealed-box.js';

const KEY = randomBytes(32);
const OWNER = ownerOf('token', 'key-a', 'docs');

describe('seal and open', () => {
  it('round-trips, with a new IV each time, and hides the plaintext', () => {
    const first = seal(KEY, 'access-token-value', OWNER);
    const second = seal(KEY, 'access-token-value', OWNER);
    expect(first).not.toBe(second);
    expect(first).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
    expect(Buffer.from(first.slice(3), 'base64url').toString('latin1')).not.toContain('access-token-value');
    expect(open(KEY, first, OWNER)).toBe('access-token-value');
    expect(open(KEY, second, OWNER)).toBe('access-token-value');
  });

  it('refuses another owner, another key, any altered byte and a truncated blob', () => {
    const blob = seal(KEY, '{"tokens":{}}', OWNER);
    expect(() => open(KEY, blob, ownerOf('token', 'key-b', 'docs'))).toThrow(SealedBoxError);
    expect(() => open(KEY, blob, ownerOf('token', 'key-a', 'wiki'))).toThrow(SealedBoxError);
    // Parts are not concatenated: ("key-a", "docs") is not ("key-", "adocs").
    expect(() => open(KEY, blob, ownerOf('token', 'key-', 'adocs'))).toThrow(SealedBoxError);
    expect(() => open(randomBytes(32), blob, OWNER)).toThrow(SealedBoxError);
    const bytes = Buffer.from(blob.slice(3), 'base64url');
    for (let index = 0; index < bytes.length; index += 1) {
      const altered = Buffer.from(bytes);
      altered[index]! ^= 0x01;
      expect(() => open(KEY, `v1.${altered.toString('base64url')}`, OWNER)).toThrow(SealedBoxError);
    }
    expect(() => open(KEY, `v1.${bytes.subarray(0, 20).toString('base64url')}`, OWNER)).toThrow(SealedBoxError);
    expect(() => open(KEY, 'plain text', OWNER)).toThrow(SealedBoxError);
  });
});

describe('credentialsKeyFromBase64', () => {
  it('takes 32 bytes of base64 and names the variable, not the value, otherwise', () => {
    const key = randomBytes(32);
    expect(credentialsKeyFromBase64(key.toString('base64')).equals(key)).toBe(true);
    expect(credentialsKeyFromBase64(`${key.toString('base64')}\n`).equals(key)).toBe(true);
    const short = randomBytes(16).toString('base64');
    expect(() => credentialsKeyFromBase64(short)).toThrow('MCP_CREDENTIALS_KEY must decode to 32 bytes, not 16 (openssl rand -base64 32)');
    expect(() => credentialsKeyFromBase64('not base64 at all!')).toThrow('MCP_CREDENTIALS_KEY must be base64');
    try {
      credentialsKeyFromBase64(short);
    } catch (error) {
      expect((error as Error).message).not.toContain(short);
    }
  });
});
