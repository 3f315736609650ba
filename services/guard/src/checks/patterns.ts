/**
 * The operator's words and patterns, compiled with RE2 (the `re2` binding of Google's engine):
 * matching is linear in the text whatever the pattern, so neither a hostile pattern put by an
 * operator (`(a+)+$`) nor a hostile text can stall a replica, and constructs RE2 cannot run in
 * linear time (backreferences, lookaround) are refused when the policy is put. Words match whole
 * (no letter or digit of any script on either side), case-insensitively.
 */
import RE2 from 're2';
import type { Finding, Scanner } from './scanner.js';

/** A patterns check as stored. */
export interface PatternsSpec {
  words: readonly string[];
  patterns: readonly string[];
  entity: string;
}

/** At most this many words and patterns, and this long each. */
export const PATTERN_LIMITS = Object.freeze({ words: 1_000, wordLength: 200, patterns: 100, patternLength: 1_000 });

/** A letter, mark or digit of any script: what a word may not touch. */
const WORD_CHARACTER = /[\p{L}\p{M}\p{N}_]/u;

function escapeRe2(word: string): string {
  return word.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}

/** RE2 of a pattern, or the reason it cannot be one. */
function compile(source: string, flags: string): RE2 | string {
  try {
    return new RE2(source, flags);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Why the spec cannot be compiled, or undefined when it can. */
export function validatePatternsSpec(spec: PatternsSpec): string | undefined {
  if (spec.words.length === 0 && spec.patterns.length === 0) return 'A patterns check needs at least one word or pattern.';
  if (spec.words.length > PATTERN_LIMITS.words) return `A patterns check has at most ${PATTERN_LIMITS.words} words.`;
  if (spec.patterns.length > PATTERN_LIMITS.patterns) return `A patterns check has at most ${PATTERN_LIMITS.patterns} patterns.`;
  for (const word of spec.words)
    if (word.trim().length === 0 || word.length > PATTERN_LIMITS.wordLength) return `Each word has 1 to ${PATTERN_LIMITS.wordLength} characters.`;
  for (const [index, pattern] of spec.patterns.entries()) {
    if (pattern.length === 0 || pattern.length > PATTERN_LIMITS.patternLength)
      return `patterns[${index}] must have 1 to ${PATTERN_LIMITS.patternLength} characters.`;
    const compiled = compile(pattern, 'gu');
    if (typeof compiled === 'string') return `patterns[${index}] is not a pattern RE2 can run (${compiled.slice(0, 200)}).`;
    if (compiled.test('')) return `patterns[${index}] matches the empty text, so it would match everywhere.`;
  }
  if (spec.entity && !/^[a-z][a-z0-9_]{0,31}$/.test(spec.entity)) return 'entity is 1 to 32 lowercase letters, digits or "_", starting with a letter.';
  return undefined;
}

/** Every non-empty match of a global RE2 in `text`, as spans. */
function matchesOf(pattern: RE2, text: string, entity: string, accept: (start: number, end: number) => boolean): Finding[] {
  const found: Finding[] = [];
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    const start = match.index;
    const end = start + match[0].length;
    if (end === start) {
      pattern.lastIndex = end + 1;
      continue;
    }
    if (accept(start, end)) found.push({ entity, start, end });
  }
  return found;
}

/** The scanner of a validated spec. */
export function createPatternsScanner(spec: PatternsSpec): Scanner {
  const entity = spec.entity || 'pattern';
  const words =
    spec.words.length > 0
      ? (compile(
          `(?:${[...spec.words]
            .sort((a, b) => b.length - a.length)
            .map(escapeRe2)
            .join('|')})`,
          'giu',
        ) as RE2)
      : undefined;
  const patterns = spec.patterns.map((pattern) => compile(pattern, 'gu') as RE2);
  // Every proper prefix of every word, lower-cased: a text ending in one may go on to the word.
  const prefixes = new Set(spec.words.flatMap((word) => [...Array(word.length - 1).keys()].map((length) => word.slice(0, length + 1).toLowerCase())));
  const longestWord = Math.max(0, ...spec.words.map((word) => word.length));
  const whole = (text: string) => (start: number, end: number) =>
    !(start > 0 && WORD_CHARACTER.test(text[start - 1]!)) && !(end < text.length && WORD_CHARACTER.test(text[end]!));
  return {
    scan(texts) {
      return texts.map((text) => {
        const found = [
          ...(words ? matchesOf(words, text, entity, whole(text)) : []),
          ...patterns.flatMap((pattern) => matchesOf(pattern, text, entity, () => true)),
        ];
        return found.sort((a, b) => a.start - b.start || b.end - a.end);
      });
    },
    pendingTail(text) {
      // The longest end of the text that a word starts with.
      for (let length = Math.min(longestWord - 1, text.length); length > 0; length--)
        if (prefixes.has(text.slice(text.length - length).toLowerCase())) return length;
      return 0;
    },
  };
}
