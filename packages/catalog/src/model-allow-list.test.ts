import { describe, expect, it } from 'vitest';
import { ALLOW_LIST_CASES, allowListProblem, MAX_ALLOW_LIST_ENTRIES, modelAllowed } from './model-allow-list.js';

describe('modelAllowed', () => {
  it.each(ALLOW_LIST_CASES)('lists $lists, model "$model": allowed $allowed', ({ lists, model, allowed }) => {
    expect(modelAllowed(lists, model)).toBe(allowed);
  });
});

describe('allowListProblem', () => {
  it('accepts ids, prefix patterns and an empty list', () => {
    expect(allowListProblem(['gpt-4o', 'claude-*', '*'])).toBeUndefined();
    expect(allowListProblem([])).toBeUndefined();
  });

  it.each([
    [[''], 'non-empty'],
    [['gpt*4o'], 'only as its last character'],
    [['**'], 'only as its last character'],
    [['gpt 4o'], 'whitespace'],
    [['x'.repeat(129)], 'longer than 128'],
    [[42], 'non-empty model id'],
    [Array.from({ length: MAX_ALLOW_LIST_ENTRIES + 1 }, (_, index) => `m${index}`), 'at most 100 entries'],
  ])('refuses %j', (list, problem) => {
    expect(allowListProblem(list)).toContain(problem);
  });
});
