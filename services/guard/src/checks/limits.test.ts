import { describe, expect, it } from 'vitest';
import { createLimitsScanner, validateLimitsSpec } from './limits.js';

describe('limits', () => {
  it('find the text that crosses max_chars, once, without a span', () => {
    const found = createLimitsScanner({ max_chars: 10, allowed_scripts: [] }).scan(['123456', '7890', 'x'], {} as never) as unknown[][];
    expect(found).toEqual([[], [], [{ entity: 'max_chars', start: -1, end: -1 }]]);
  });

  it('find each run of letters of a script not allowed, digits and punctuation always allowed', () => {
    const text = 'Hello 123, Привет мир! and 中文.';
    const found = (createLimitsScanner({ max_chars: 0, allowed_scripts: ['Latin'] }).scan([text], {} as never) as { start: number; end: number }[][])[0]!;
    expect(found.map((finding) => text.slice(finding.start, finding.end))).toEqual(['Привет мир', '中文']);
  });

  it('refuse unknown scripts and an empty limit', () => {
    expect(validateLimitsSpec({ max_chars: 0, allowed_scripts: ['Klingon'] })).toMatch(/Klingon/);
    expect(validateLimitsSpec({ max_chars: 0, allowed_scripts: [] })).toMatch(/needs/);
    expect(validateLimitsSpec({ max_chars: 100, allowed_scripts: ['Cyrillic', 'Han'] })).toBeUndefined();
  });
});
