import { describe, expect, it } from 'vitest';
import { PROMPT_FEATURE_COUNT, PROMPT_FEATURE_NAMES, promptFeatures } from './prompt-features.js';
import { HOSTILE_PROMPTS } from './testing/hostile-prompts.js';

const feature = (text: string, name: (typeof PROMPT_FEATURE_NAMES)[number]) => promptFeatures(text)[PROMPT_FEATURE_NAMES.indexOf(name)];

describe('promptFeatures', () => {
  it('has one value per named feature, the bias first', () => {
    expect(promptFeatures('anything')).toHaveLength(PROMPT_FEATURE_COUNT);
    expect(promptFeatures('')[0]).toBe(1);
    expect(promptFeatures('He has 12 apples.\nA. 1\nB. 2')).toEqual(promptFeatures('He has 12 apples.\nA. 1\nB. 2'));
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
    expect(feature('Prove that the square root of 2 is irrational.', 'proof_or_derivation')).toBe(1);
    expect(feature('Derive the variance of a binomial distribution.', 'proof_or_derivation')).toBe(1);
    expect(feature('What is the square root of 2?', 'proof_or_derivation')).toBe(0);
    expect(feature('hi', 'short_prompt')).toBeGreaterThan(0.9);
    expect(feature('one two three four five six seven eight nine ten eleven twelve', 'short_prompt')).toBe(0);
  });
});

describe('words in any script', () => {
  it('counts Cyrillic, Greek and accented words, and Chinese and Japanese characters', () => {
    const russian = 'Напишите функцию на Python, которая объединяет пересекающиеся интервалы в списке и возвращает их отсортированными.';
    expect(feature(russian, 'short_prompt')).toBe(0);
    expect(feature(russian, 'log_words')).toBeCloseTo(Math.log1p(14) / 6, 10);
    expect(feature('Ο Σωκράτης ήταν Αθηναίος φιλόσοφος της κλασικής εποχής.', 'log_words')).toBeCloseTo(Math.log1p(8) / 6, 10);
    expect(feature('小明买了15支铅笔和4本笔记本，他应该找回多少钱？', 'short_prompt')).toBe(0);
    expect(feature('Привет!', 'short_prompt')).toBeGreaterThan(0.9);
  });
});

describe('answer option features', () => {
  const question = (stem: string, ...options: string[]) => `${stem}\n${options.map((option, index) => `${'ABCD'[index]}. ${option}`).join('\n')}\nAnswer:`;

  it('reads the options apart from the stem', () => {
    const numeric = question('A train covers 120 km in 1.5 hours. What is its average speed?', '60 km/h', '80 km/h', '90 km/h', '180 km/h');
    expect(feature(numeric, 'numeric_option_share')).toBe(1);
    expect(feature(numeric, 'log_distinct_stem_numbers')).toBeCloseTo(Math.log1p(2) / 3, 10);
    expect(feature(numeric, 'stem_words')).toBeLessThan(
      feature(`${numeric} Show your reasoning and explain every step of the computation carefully.`, 'stem_words'),
    );
    expect(feature('What is the capital of France?', 'option_words')).toBe(0);
    expect(feature(question('Pick one.', 'yes', 'a much longer option with many words in it', 'no', 'maybe'), 'option_length_spread')).toBeGreaterThan(0.5);
  });

  it('sees paired verdicts, numeral combinations, "all of the above" and negated selection', () => {
    expect(
      feature(
        question('Statement 1 | Every group is abelian. Statement 2 | Z is cyclic.', 'True, True', 'False, False', 'True, False', 'False, True'),
        'verdict_pair_options',
      ),
    ).toBe(1);
    expect(feature(question('Which are prime? I. 2 II. 4 III. 5', 'I only', 'II only', 'I and III', 'I, II and III'), 'roman_combination_options')).toBe(1);
    expect(feature(question('Which applies?', 'red', 'blue', 'green', 'All of the above'), 'all_or_none_option')).toBe(1);
    expect(feature(question('Which of the following is NOT a mammal?', 'whale', 'bat', 'shark', 'dog'), 'negated_selection')).toBe(1);
    expect(feature(question('Which of the following is a mammal?', 'whale', 'trout', 'shark', 'eel'), 'negated_selection')).toBe(0);
    expect(feature('This question refers to the following information.\n"We hold these truths..."', 'passage_reference')).toBe(1);
    expect(feature('Suppose the central bank raises rates.', 'hypothetical')).toBe(1);
  });
});

describe('hostile text', () => {
  // Linear time is a speed target, measured by `pnpm bench router` against prose in the same run
  // (a pattern quadratic in the 4,000-character head cost 90 ms a call for line breaks). Here,
  // ten calls under 15 s catch a hang (a catastrophic backtrack takes minutes), not a slowdown,
  // however loaded the machine.
  it.each(Object.entries(HOSTILE_PROMPTS))(
    'scores 16K characters of %s, the same each call',
    (_name, text) => {
      const first = promptFeatures(text);
      expect(first).toHaveLength(PROMPT_FEATURE_COUNT);
      const start = performance.now();
      for (let round = 0; round < 10; round += 1) expect(promptFeatures(text)).toEqual(first);
      expect(performance.now() - start).toBeLessThan(15_000);
    },
    30_000,
  );

  it('finds what the original patterns found, on random text made of their edge cases', () => {
    // The patterns as they were before they were made linear; the features they feed must not move.
    const original = {
      decimal: /\d+\.\d+|\b\d+\/\d+\b/g,
      enumerated: /^\s*(?:[A-Da-d]|\d{1,2}|[ivx]{1,4})[.)]\s+\S/gm,
      numericOption: /^\s*[A-Da-d][.)]\s*[-$]?\d/gm,
      optionLine: /^\s*[A-Da-d][.)][ \t]*(.*)$/gm,
      hypothetical: /\bsuppose|\bassume|\bimagine|\bif\b.*\bwould\b/,
    };
    const countOf = (text: string, pattern: RegExp) => text.match(pattern)?.length ?? 0;
    const units = [
      '\n',
      '\r\n',
      '\r',
      '\u2028',
      ' ',
      '\t',
      'A. ',
      'b) ',
      'C.',
      'i. ',
      'iv) ',
      '12. ',
      '1.5',
      '2/3',
      '7',
      '.',
      '/',
      '$',
      '-',
      'if',
      ' if ',
      ' would ',
      'iff',
      'x',
      'word',
      'suppose',
    ];
    let state = 11;
    const random = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state / 2 ** 32;
    };
    for (let trial = 0; trial < 3_000; trial += 1) {
      let text = '';
      for (let count = 1 + Math.floor(random() * 30); count > 0; count -= 1) text += units[Math.floor(random() * units.length)];
      const options = [...text.matchAll(original.optionLine)].map((match) => match[1]!.trim());
      const stem = text.replace(original.optionLine, '').toLowerCase();
      const words = (part: string) => part.split(/\s+/).filter(Boolean).length;
      const mean = options.length ? options.reduce((sum, option) => sum + words(option), 0) / options.length : 0;
      const message = JSON.stringify(text);
      expect(feature(text, 'decimal_or_fraction'), message).toBe(Math.min(1, countOf(text, original.decimal) / 3));
      expect(feature(text, 'enumerated_lines'), message).toBe(Math.log1p(countOf(text, original.enumerated)) / 2);
      expect(feature(text, 'numeric_options'), message).toBe(Math.min(1, countOf(text, original.numericOption) / 4));
      expect(feature(text, 'option_words'), message).toBe(Math.log1p(mean) / 3);
      expect(feature(text, 'stem_words'), message).toBe(Math.log1p(words(stem)) / 6);
      expect(feature(text, 'hypothetical'), message).toBe(original.hypothetical.test(stem) ? 1 : 0);
    }
  });
});
