import { describe, expect, it } from 'vitest';
import { textPieces } from './completion-plan.js';
import { tokenLogprobs } from './token-logprobs.js';

const vocabulary = [
  'alpha',
  'beta',
  'gamma',
  'delta',
  'epsilon',
  'zeta',
  'eta',
  'theta',
  'iota',
  'kappa',
  'lambda',
  'mu',
  'nu',
  'xi',
  'omicron',
  'pi',
  'rho',
  'sigma',
  'tau',
  'upsilon',
  'phi',
];

describe('tokenLogprobs', () => {
  it('keeps tokens and bytes consistent with a text of multi-byte characters', () => {
    const text = 'Grüße aus Köln 👋, 你好世界! Ça va?';
    const tokens = tokenLogprobs(textPieces(text), { seedText: 'unicode', topCount: 2, vocabulary });
    expect(tokens.map((token) => token.token).join('')).toBe(text);
    expect(Buffer.from(tokens.flatMap((token) => token.bytes ?? []))).toEqual(Buffer.from(text, 'utf8'));
    for (const token of tokens) {
      expect(Buffer.from(token.bytes ?? []).toString('utf8')).toBe(token.token);
      expect(token.bytes?.every((byte) => byte >= 0 && byte <= 255)).toBe(true);
    }
  });

  it('gives exactly top_logprobs distinct entries, most likely first, up to the maximum of 20', () => {
    const tokens = tokenLogprobs(['The', ' gateway', '.', ' 42'], { seedText: 'top', topCount: 20, vocabulary });
    for (const token of tokens) {
      const top = token.top_logprobs ?? [];
      expect(top).toHaveLength(20);
      expect(new Set(top.map((entry) => entry.token)).size).toBe(20);
      expect(top.some((entry) => entry.token === token.token && entry.logprob === token.logprob)).toBe(true);
      const logprobs = top.map((entry) => entry.logprob as number);
      expect(logprobs).toEqual([...logprobs].sort((left, right) => right - left));
      expect(logprobs.every((logprob) => Number.isFinite(logprob) && logprob <= 0 && logprob >= -9999)).toBe(true);
    }
    // Alternatives are shaped like the token: the same leading space, a capital when it has one.
    expect(tokens[1]?.top_logprobs?.filter((entry) => /^[a-z]/i.test(entry.token ?? '')) ?? []).toEqual([]);
    expect(tokens[0]?.top_logprobs?.filter((entry) => /^[a-z]/.test(entry.token ?? '')) ?? []).toEqual([]);
  });

  it('depends on the seed text only', () => {
    const pieces = ['Hello', ' there', '!'];
    const first = tokenLogprobs(pieces, { seedText: 'a', topCount: 3, vocabulary });
    expect(tokenLogprobs(pieces, { seedText: 'a', topCount: 3, vocabulary })).toEqual(first);
    expect(tokenLogprobs(pieces, { seedText: 'b', topCount: 3, vocabulary }).map((token) => token.logprob)).not.toEqual(first.map((token) => token.logprob));
  });
});
