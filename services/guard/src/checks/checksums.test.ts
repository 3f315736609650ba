/**
 * The check digits: known numbers pass, the same numbers with one digit changed or two adjacent
 * digits swapped fail (the errors the checks exist to catch).
 */
import { describe, expect, it } from 'vitest';
import { passesLuhn, passesVerhoeff } from './checksums.js';

describe('passesLuhn', () => {
  it('passes card numbers and a SIN, and fails them with one digit changed', () => {
    for (const digits of ['4111111111111111', '378282246310005', '5500000000000004', '046454286']) {
      expect(passesLuhn(digits)).toBe(true);
      expect(passesLuhn(`${digits.slice(0, -1)}${(Number(digits.at(-1)) + 1) % 10}`)).toBe(false);
    }
  });
});

describe('passesVerhoeff', () => {
  it('passes numbers with their check digit, and fails a changed digit or a swap of neighbours', () => {
    expect(passesVerhoeff('2363')).toBe(true);
    expect(passesVerhoeff('234567890129')).toBe(true);
    expect(passesVerhoeff('234567890128')).toBe(false);
    expect(passesVerhoeff('243567890129')).toBe(false);
  });
});
