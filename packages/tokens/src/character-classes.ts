/**
 * The Unicode classes that o200k_base's pre-tokenizer splits on (letters, marks, numbers, white
 * space), looked up per code point in a table instead of with regular expressions: the segmenter
 * (text-segments.ts) reads every character of every text the gateway counts, and a `\p{...}`
 * regular expression cost as much per character as the tokenizer itself (30 ms per MB).
 *
 * The table is filled one code point at a time, when first seen (0.1 µs each: all of Unicode
 * would take 0.1 s, so no text pays for more than it holds), by the same regular expressions the
 * tokenizer's own pattern uses (`\p{L}`, `\p{M}`, `\p{N}`, `\s` with the `u` flag), so both
 * agree on every code point by construction, whatever Unicode version Node ships.
 */

/** `\p{L}`: a letter. */
export const LETTER = 1;
/** `\p{M}`: a combining mark. */
export const MARK = 2;
/** `\p{N}`: a number. */
export const NUMBER = 4;
/** `\s`: white space or a line terminator. */
export const SPACE = 8;

// The kinds of runs a pre-tokenizer piece is made of (see text-segments.ts). A code point may be
// of several kinds (a mark is a letter and a symbol; `\n` is a space and a symbol tail), and every
// code point has a class or a kind, so its table entry is never 0 once known.

/** Letters and marks: the body of a word piece. */
export const LETTER_RUN = 16;
/** Anything but white space, letters and numbers: the body of a symbol piece. */
export const SYMBOL_RUN = 32;
/** White space: a space piece. */
export const SPACE_RUN = 64;
/** `\r`, `\n` and `/`, which o200k_base lets trail a symbol run in the same piece. */
export const SYMBOL_TAIL_RUN = 128;

const CODE_POINTS = 0x110000;

/** Classes and kinds of every code point, 0 until it is classified: 1.1 MB, committed as it is used. */
const table = new Uint8Array(CODE_POINTS);

/** The four classes are disjoint, so the group that matched names the class. */
const CLASS_PATTERN = /^(?:(\p{L})|(\p{M})|(\p{N})|(\s))/u;
const CLASS_OF_GROUP = [0, LETTER, MARK, NUMBER, SPACE];

function kindsOf(codePoint: number, classes: number): number {
  let kinds = 0;
  if (classes & (LETTER | MARK)) kinds |= LETTER_RUN;
  if (!(classes & (SPACE | LETTER | NUMBER))) kinds |= SYMBOL_RUN;
  if (classes & SPACE) kinds |= SPACE_RUN;
  if (codePoint === 0x0a || codePoint === 0x0d || codePoint === 0x2f) kinds |= SYMBOL_TAIL_RUN;
  return kinds;
}

/** Classifies a code point seen for the first time, and remembers it. */
function classify(codePoint: number): number {
  const match = CLASS_PATTERN.exec(String.fromCodePoint(codePoint));
  let classes = 0;
  if (match !== null) for (let group = 1; group < CLASS_OF_GROUP.length; group += 1) if (match[group] !== undefined) classes = CLASS_OF_GROUP[group];
  const entry = classes | kindsOf(codePoint, classes);
  table[codePoint] = entry;
  return entry;
}

/**
 * The class bits (LETTER, MARK, NUMBER, SPACE) and run kinds (LETTER_RUN, SYMBOL_RUN, SPACE_RUN,
 * SYMBOL_TAIL_RUN) of a code point. A lone surrogate has no class: it is a symbol, as it is to
 * the tokenizer's pattern.
 */
export function characterClassOf(codePoint: number): number {
  const entry = table[codePoint];
  return entry !== 0 ? entry : classify(codePoint);
}
