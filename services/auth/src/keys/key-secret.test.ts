import { describe, expect, it } from 'vitest';
import { hashSecret, MAX_SECRET_LENGTH } from '../shared/ids.js';
import { generateKeyId, generateSecret, isWellFormedSecret } from './key-secret.js';

describe('key secrets', () => {
  it('draws secrets of br- and 40 base62 characters, all different', () => {
    const secrets = new Set(Array.from({ length: 1000 }, generateSecret));
    expect(secrets.size).toBe(1000);
    for (const secret of secrets) expect(secret).toMatch(/^br-[A-Za-z0-9]{40}$/);
  });

  it('uses the whole base62 alphabet and nothing else after the prefix', () => {
    // Each secret's own 40 characters: the prefix's `b`, `r` and `-` must not count.
    const characters = new Set(Array.from({ length: 200 }, () => generateSecret().slice(3)).join(''));
    expect([...characters].sort().join('')).toBe([...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'].sort().join(''));
  });

  it('draws key ids of key_ and 16 base62 characters', () => {
    expect(generateKeyId()).toMatch(/^key_[A-Za-z0-9]{16}$/);
  });

  it('tells well-formed secrets from anything else', () => {
    expect(isWellFormedSecret(generateSecret())).toBe(true);
    expect(isWellFormedSecret(`br-${'a'.repeat(32)}`)).toBe(true);
    expect(isWellFormedSecret(`br-${'a'.repeat(31)}`)).toBe(false);
    expect(isWellFormedSecret(`sk-${'a'.repeat(40)}`)).toBe(false);
    expect(isWellFormedSecret(`br-${'a'.repeat(39)}!`)).toBe(false);
    // MAX_SECRET_LENGTH counts the whole secret, prefix included.
    expect(isWellFormedSecret(`br-${'a'.repeat(MAX_SECRET_LENGTH - 3)}`)).toBe(true);
    expect(isWellFormedSecret(`br-${'a'.repeat(MAX_SECRET_LENGTH - 2)}`)).toBe(false);
    expect(isWellFormedSecret('')).toBe(false);
  });

  it('hashes to SHA-256 hex', () => {
    // The FIPS 180-2 test vector.
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashSecret('br-abc')).not.toBe(hashSecret('br-abd'));
  });
});
