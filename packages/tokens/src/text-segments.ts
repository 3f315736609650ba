/**
 * Cuts a text into the segments the tokenizer reads one at a time, so that counting costs time
 * linear in the text's length and can pause between segments.
 *
 * Why: gpt-tokenizer's byte-pair merge is quadratic in the length of one pre-tokenizer piece (a
 * 100,000-letter word held the event loop for 24 s), and a piece is as long as the caller makes
 * it. o200k_base's pre-tokenizer makes pieces of one letter run (with one leading character and
 * a contraction), one number of at most three digits, one symbol run (with one leading space and
 * a tail of `\r`, `\n` and `/`), or one white-space run. A piece longer than about twice
 * LONG_RUN_CHARACTERS therefore holds a run of at least LONG_RUN_CHARACTERS code units of one of
 * four kinds: letters and marks, symbols (anything but white space, letters and numbers), white
 * space, or `\r` `\n` `/`.
 *
 * Contracts:
 * - Joined, the segments are the text; no segment splits a surrogate pair.
 * - A text with no long run is cut only at token boundaries that the pre-tokenizer cannot move
 *   (see isTokenBoundary), so the sum of its segments' counts is exactly the count of the whole
 *   text. A segment holds about SEGMENT_BYTES of UTF-8 at most (the tokenizer's work grows with
 *   bytes, not characters) and pieces of at most about 2 * LONG_RUN_CHARACTERS code units, so
 *   each segment costs bounded time.
 * - A long run is cut into chunks of LONG_RUN_CHARACTERS code units, and the text before it ends
 *   where it starts: at most one token more or less per cut, only for such pathological text.
 *   Where a text has no long run and no token boundary in the second half of a segment (no
 *   space, line break, letter or number followed by something else), it is cut there too.
 * - Deterministic: the segments depend on the text alone, so a count paused between segments
 *   (time-slices.ts) equals one made in a single call.
 */
import { LETTER, LETTER_RUN, MARK, NUMBER, SPACE, SPACE_RUN, SYMBOL_RUN, SYMBOL_TAIL_RUN, characterClassOf } from './character-classes.js';

/**
 * Runs at least this long of one kind are cut into chunks of this many code units. Long enough
 * that ordinary text is never cut (an 80-character `----` rule, a Thai phrase, a deep JSON
 * indentation, a long identifier stay whole and exact), short enough that a chunk costs the
 * tokenizer under a millisecond (256 distinct CJK characters: 0.8 ms; 64 of them cost 2.6 µs a
 * character, 256 cost 3.2 µs, 512 cost 4.4 µs). A power of two (see scan).
 */
export const LONG_RUN_CHARACTERS = 256;

/**
 * The UTF-8 bytes of one segment of ordinary text, at most (one code point more at worst): about
 * 0.1 ms of tokenizer work for English, 3 to 6 ms for CJK or Thai text whose pieces miss the
 * tokenizer's cache (2 to 4 µs a character), so a paused count never runs long between two
 * chances to pause.
 */
export const SEGMENT_BYTES = 4_096;

/** One segment: its text and that text's length in UTF-8, the measure of the tokenizer's work. */
export interface TextSegment {
  readonly text: string;
  readonly bytes: number;
}

const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const SLASH = 0x2f;
const APOSTROPHE = 0x27;

/**
 * True when no o200k_base piece can hold both code points, and the pieces before them come out
 * the same whether the text ends after the first or goes on: the tokens of the text are then the
 * tokens of the part before followed by those of the part after. Each rule follows from the
 * pre-tokenizer's pattern (gpt-tokenizer's O200K_TOKEN_SPLIT_REGEX), which only looks forward:
 * 1. a non-space, then a space other than `\r` or `\n` (a symbol's tail may hold those);
 * 2. a letter, then anything but a letter, a mark or `'` (which may start a contraction like 's);
 * 3. a number, then a non-number (a number is a piece of its own);
 * 4. a `\n`, then a non-space other than `/`.
 * text-segments.test.ts checks the rules on random text against the tokenizer itself.
 */
export function isTokenBoundary(previousCodePoint: number, nextCodePoint: number): boolean {
  const previous = characterClassOf(previousCodePoint);
  const next = characterClassOf(nextCodePoint);
  if (!(previous & SPACE) && next & SPACE && nextCodePoint !== LINE_FEED && nextCodePoint !== CARRIAGE_RETURN) return true;
  if (previous & LETTER && !(next & (LETTER | MARK)) && nextCodePoint !== APOSTROPHE) return true;
  if (previous & NUMBER && !(next & NUMBER)) return true;
  return previousCodePoint === LINE_FEED && !(next & SPACE) && nextCodePoint !== SLASH;
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** UTF-8 bytes of one code point; a lone surrogate counts the 3 bytes of U+FFFD, as the tokenizer's TextEncoder writes it. */
function codePointBytes(codePoint: number): number {
  return codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
}

/** UTF-8 bytes of text[from, to), both code point boundaries. */
function bytesBetween(text: string, from: number, to: number): number {
  let bytes = 0;
  for (let index = from; index < to; ) {
    const codePoint = text.codePointAt(index)!;
    bytes += codePointBytes(codePoint);
    index += codePoint > 0xffff ? 2 : 1;
  }
  return bytes;
}

/** `index`, or one less where `index` would split a surrogate pair. */
function codePointBoundary(text: string, index: number): number {
  if (index <= 0 || index >= text.length) return index;
  return isHighSurrogate(text.charCodeAt(index - 1)) && isLowSurrogate(text.charCodeAt(index)) ? index - 1 : index;
}

/** The code point that ends just before `index` (a code point boundary). */
function codePointBefore(text: string, index: number): number {
  const unit = text.charCodeAt(index - 1);
  return isLowSurrogate(unit) && index >= 2 && isHighSurrogate(text.charCodeAt(index - 2)) ? text.codePointAt(index - 2)! : unit;
}

/** The last token boundary in (from, to), both code point boundaries; -1 when there is none. */
function lastTokenBoundary(text: string, from: number, to: number): number {
  let index = to;
  let next = text.codePointAt(index)!;
  while (index > from) {
    const previous = codePointBefore(text, index);
    if (index < to && isTokenBoundary(previous, next)) return index;
    index -= previous > 0xffff ? 2 : 1;
    next = previous;
  }
  return -1;
}

/** What one pass of the scanner found from a position. */
interface Scan {
  /** Where the scan stopped: the end of a long run's first LONG_RUN_CHARACTERS units, or of the budget or text. */
  readonly end: number;
  readonly bytes: number;
  /** The long run's kind (LETTER_RUN, SYMBOL_RUN, SPACE_RUN or SYMBOL_TAIL_RUN) and start; kind 0 when none. */
  readonly runKind: number;
  readonly runStart: number;
}

/**
 * Reads from `from` until a run of LONG_RUN_CHARACTERS code units of one kind ends (a run that
 * began before `from` counts from there), SEGMENT_BYTES have been read, or the text ends. The hot
 * loop of every count: one table lookup and four counters per code point.
 */
function scan(text: string, from: number): Scan {
  // Lengths, in code units, of the runs of each kind that end at `index`.
  let letters = 0;
  let symbols = 0;
  let spaces = 0;
  let tails = 0;
  let bytes = 0;
  let index = from;
  while (index < text.length && bytes < SEGMENT_BYTES) {
    let codePoint = text.charCodeAt(index);
    let width = 1;
    if (isHighSurrogate(codePoint) && index + 1 < text.length && isLowSurrogate(text.charCodeAt(index + 1))) {
      codePoint = text.codePointAt(index)!;
      width = 2;
    }
    const kinds = characterClassOf(codePoint);
    bytes += codePointBytes(codePoint);
    letters = kinds & LETTER_RUN ? letters + width : 0;
    symbols = kinds & SYMBOL_RUN ? symbols + width : 0;
    spaces = kinds & SPACE_RUN ? spaces + width : 0;
    tails = kinds & SYMBOL_TAIL_RUN ? tails + width : 0;
    index += width;
    // One test for all four: LONG_RUN_CHARACTERS is a power of two, so the bitwise or of lengths
    // below it stays below it.
    if ((letters | symbols | spaces | tails) >= LONG_RUN_CHARACTERS) {
      if (letters >= LONG_RUN_CHARACTERS) return { end: index, bytes, runKind: LETTER_RUN, runStart: index - letters };
      if (symbols >= LONG_RUN_CHARACTERS) return { end: index, bytes, runKind: SYMBOL_RUN, runStart: index - symbols };
      if (spaces >= LONG_RUN_CHARACTERS) return { end: index, bytes, runKind: SPACE_RUN, runStart: index - spaces };
      return { end: index, bytes, runKind: SYMBOL_TAIL_RUN, runStart: index - tails };
    }
  }
  return { end: index, bytes, runKind: 0, runStart: -1 };
}

/** The text's segments, in order (see the file header). A short ordinary text is one segment: itself. */
export function* textSegments(text: string): Generator<TextSegment, void, undefined> {
  const length = text.length;
  let position = 0;
  while (position < length) {
    const found = scan(text, position);
    if (found.runKind === 0) {
      if (found.end === length) {
        yield { text: position === 0 ? text : text.slice(position), bytes: found.bytes };
        return;
      }
      // Cut at the last token boundary of the second half, so that each pass moves on by at
      // least half of what it read: the scan stays linear.
      const boundary = lastTokenBoundary(text, position + Math.floor((found.end - position) / 2), found.end);
      const end = boundary > 0 ? boundary : found.end;
      yield { text: text.slice(position, end), bytes: found.bytes - bytesBetween(text, end, found.end) };
      position = end;
      continue;
    }

    if (found.runStart > position) yield { text: text.slice(position, found.runStart), bytes: bytesBetween(text, position, found.runStart) };
    // The run goes on while its kind does, at most one budget of bytes per pass; a longer run is
    // found again at the start of the next pass.
    let runEnd = found.end;
    let runBytes = bytesBetween(text, found.runStart, found.end);
    while (runEnd < length && runBytes < SEGMENT_BYTES) {
      const codePoint = text.codePointAt(runEnd)!;
      if (!(characterClassOf(codePoint) & found.runKind)) break;
      runEnd += codePoint > 0xffff ? 2 : 1;
      runBytes += codePointBytes(codePoint);
    }
    for (let chunkStart = found.runStart; chunkStart < runEnd; ) {
      const chunkEnd = Math.min(runEnd, codePointBoundary(text, chunkStart + LONG_RUN_CHARACTERS));
      yield { text: text.slice(chunkStart, chunkEnd), bytes: bytesBetween(text, chunkStart, chunkEnd) };
      chunkStart = chunkEnd;
    }
    position = runEnd;
  }
}
