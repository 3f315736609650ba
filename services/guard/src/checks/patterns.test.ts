import { describe, expect, it } from 'vitest';
import { createPatternsScanner, validatePatternsSpec } from './patterns.js';

const scan = (spec: { words?: string[]; patterns?: string[] }, text: string) =>
  (
    createPatternsScanner({ words: spec.words ?? [], patterns: spec.patterns ?? [], entity: '' }).scan([text], {} as never) as {
      start: number;
      end: number;
    }[][]
  )[0]!.map((finding) => text.slice(finding.start, finding.end));

describe('patterns', () => {
  it('match words whole and without case, in any script, with spans in UTF-16 units', () => {
    expect(scan({ words: ['falcon'] }, 'FALCON, falcons, Falcon!')).toEqual(['FALCON', 'Falcon']);
    expect(scan({ words: ['сокол'] }, '😀 Сокол летит, соколы нет')).toEqual(['Сокол']);
  });

  it('run RE2 patterns, including ones that backtrack catastrophically elsewhere', () => {
    expect(scan({ patterns: ['ID-[0-9]+'] }, '😀 ID-12 and ID-345')).toEqual(['ID-12', 'ID-345']);
    expect(scan({ patterns: ['(a+)+$'] }, `${'a'.repeat(100_000)}!`)).toEqual([]);
  });

  it('refuse what RE2 cannot run in linear time, what matches nothing but the empty text, and oversized lists', () => {
    expect(validatePatternsSpec({ words: [], patterns: ['(a)\\1'], entity: '' })).toMatch(/patterns\[0\]/);
    expect(validatePatternsSpec({ words: [], patterns: ['(?<=a)b'], entity: '' })).toMatch(/patterns\[0\]/);
    expect(validatePatternsSpec({ words: [], patterns: ['x?'], entity: '' })).toMatch(/empty/);
    expect(validatePatternsSpec({ words: [], patterns: [], entity: '' })).toMatch(/at least one/);
    expect(validatePatternsSpec({ words: ['a'], patterns: [], entity: 'Bad Entity' })).toMatch(/entity/);
    expect(validatePatternsSpec({ words: ['ok'], patterns: ['[0-9]{3}'], entity: 'code' })).toBeUndefined();
  });

  it('hold back the end of a text that a word starts with', () => {
    const scanner = createPatternsScanner({ words: ['red alert'], patterns: [], entity: '' });
    expect(scanner.pendingTail?.('we are at RED AL')).toBe('RED AL'.length);
    expect(scanner.pendingTail?.('nothing here')).toBe('re'.length);
    expect(scanner.pendingTail?.('nothing at all')).toBe(0);
  });
});
