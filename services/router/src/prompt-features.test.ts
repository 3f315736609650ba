import { describe, expect, it } from 'vitest';
import { DENSE_FEATURE_COUNT, DENSE_FEATURE_NAMES, denseFeatures, extractPromptFeatures, fnv1a } from './prompt-features.js';

const feature = (text: string, name: (typeof DENSE_FEATURE_NAMES)[number]) => denseFeatures(text)[DENSE_FEATURE_NAMES.indexOf(name)];
const OPTIONS = { hashBuckets: 1024, bigrams: true };

describe('denseFeatures', () => {
  it('has one value per named feature, the bias first', () => {
    expect(denseFeatures('anything')).toHaveLength(DENSE_FEATURE_COUNT);
    expect(denseFeatures('')[0]).toBe(1);
  });

  it('sees length, numbers and math density', () => {
    expect(feature('a '.repeat(200), 'log_words')).toBeGreaterThan(feature('a a a', 'log_words'));
    const problem = 'Tom buys 3 apples for $2 each and 4 pears at 1.5 dollars each. How much does he pay in total?';
    expect(feature(problem, 'log_numbers')).toBeGreaterThan(0);
    expect(feature(problem, 'asks_how_many_or_much')).toBe(1);
    expect(feature(problem, 'money_or_unit')).toBeGreaterThan(0);
    expect(feature('Solve for x: 3x + 2 = 11, then compute f(x) = x^2.', 'equation_like')).toBeGreaterThan(0);
    expect(feature('Evaluate \\int_0^1 x^2 dx and \\frac{1}{2}.', 'math_notation')).toBeGreaterThan(0);
    expect(feature('Tell me about tea.', 'log_numbers')).toBe(0);
  });

  it('sees code, writing, small talk and multiple-choice structure', () => {
    expect(feature('```ts\nconst total = items.reduce((sum, item) => sum + item.price, 0);\n```', 'code_syntax')).toBeGreaterThan(0.5);
    expect(feature('Implement a recursive algorithm in Python', 'code_words')).toBeGreaterThan(0.5);
    expect(feature('Tell me about tea.', 'code_syntax')).toBe(0);
    expect(feature('Write a poem about the sea.', 'writing_verbs')).toBeGreaterThan(0);
    expect(feature('hi there, how are you?', 'greeting_or_small_talk')).toBeGreaterThan(0);
    expect(feature('Which is largest?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer:', 'enumerated_lines')).toBeGreaterThan(feature('Which is largest?', 'enumerated_lines'));
    expect(feature('Which is largest?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer:', 'numeric_options')).toBe(1);
    expect(feature('hi', 'short_prompt')).toBeGreaterThan(0.9);
    expect(feature('one two three four five six seven eight nine ten eleven twelve', 'short_prompt')).toBe(0);
  });
});

describe('extractPromptFeatures', () => {
  it('puts engineered features first and unit-length hashed n-grams after, sorted', () => {
    const { indices, values } = extractPromptFeatures('The cat sat on the mat.', OPTIONS);
    const hashed = indices.map((index, position) => [index, values[position]] as const).filter(([index]) => index >= DENSE_FEATURE_COUNT);
    expect(hashed.length).toBeGreaterThan(5);
    expect(hashed.every(([index]) => index < DENSE_FEATURE_COUNT + OPTIONS.hashBuckets)).toBe(true);
    expect(hashed.map(([index]) => index)).toEqual([...hashed.map(([index]) => index)].sort((a, b) => a - b));
    expect(hashed.reduce((sum, [, value]) => sum + value * value, 0)).toBeCloseTo(1, 10);
  });

  it('is deterministic and folds numbers into one token', () => {
    expect(extractPromptFeatures('He has 12 apples.', OPTIONS)).toEqual(extractPromptFeatures('He has 12 apples.', OPTIONS));
    const hashedOf = (text: string) => extractPromptFeatures(text, OPTIONS).indices.filter((index) => index >= DENSE_FEATURE_COUNT);
    expect(hashedOf('He has 12 apples.')).toEqual(hashedOf('He has 7,500 apples.'));
    expect(fnv1a('hello')).toBe(0x4f9f2cab);
  });
});
