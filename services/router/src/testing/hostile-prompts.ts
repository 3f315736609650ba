/**
 * Prompts that once made promptFeatures' patterns work quadratically (a line-break run cost 90 ms
 * a call) and the like: 16K characters each of one repeated unit, nested brackets or random code
 * points. Shared by the feature tests and the router benchmark (bench/router.bench.ts).
 */

/** The length of each hostile prompt, in UTF-16 code units. */
export const HOSTILE_PROMPT_LENGTH = 16_384;

const repeat = (unit: string) => unit.repeat(Math.ceil(HOSTILE_PROMPT_LENGTH / unit.length)).slice(0, HOSTILE_PROMPT_LENGTH);

/** Valid UTF-16 from anywhere in Unicode, seeded so that a failure can be replayed. */
function randomCodePoints(length: number): string {
  let state = 7;
  let text = '';
  while (text.length < length) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    const codePoint = state % 0x110000;
    if (codePoint < 0xd800 || codePoint > 0xdfff) text += String.fromCodePoint(codePoint);
  }
  return text;
}

const punctuation = [...'!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'];

/** The hostile prompts by name. */
export const HOSTILE_PROMPTS: Readonly<Record<string, string>> = {
  'one long word': repeat('a'),
  emoji: repeat('😀'),
  'nested brackets': `${'('.repeat(HOSTILE_PROMPT_LENGTH / 2)}${')'.repeat(HOSTILE_PROMPT_LENGTH / 2)}`,
  'random code points': randomCodePoints(HOSTILE_PROMPT_LENGTH),
  'line breaks': repeat('\n'),
  'CRLF line breaks': repeat('\r\n'),
  'blank lines of spaces': repeat(' \n'),
  'one long number': repeat('3'),
  'numbers and dots': repeat('1.'),
  '"if" without "would"': repeat('if '),
  'option-like lines': repeat('A.\n'),
  'code-like calls': repeat('f('),
  ...Object.fromEntries(punctuation.map((character) => [`one ${character}`, repeat(character)])),
};
