import { describe, expect, it } from 'vitest';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { seededRandom } from './testing/hostile-texts.js';
import { LONG_RUN_CHARACTERS, SEGMENT_BYTES, isTokenBoundary, textSegments } from './text-segments.js';

const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

// Units that sit on the pre-tokenizer's edges: letters of each case, marks, contractions, numbers
// of several scripts, spaces of several kinds, line breaks, `/` (which may trail symbols), symbols,
// emoji, CJK, an astral letter, lone surrogates and a special token's text.
const UNITS = [
  'a',
  'b',
  'Z',
  'Q',
  'é',
  'É',
  'ß',
  'ǅ',
  'ʰ',
  '\u0301',
  '\u0308',
  "'",
  '’',
  "'s",
  "'T",
  "'ll",
  "'Re",
  "'ve",
  "'D",
  "'m",
  's',
  't',
  '1',
  '2',
  '9',
  '½',
  '٣',
  ' ',
  ' ',
  '\t',
  '\u00a0',
  '\u3000',
  '\u2028',
  '\ufeff',
  '\n',
  '\r',
  '\r\n',
  '/',
  '/\n',
  '.',
  '!',
  '?',
  ',',
  '"',
  '-',
  '#',
  '_',
  '$',
  '😀',
  '👍🏽',
  '中',
  '文',
  'あ',
  'ア',
  '𠀀',
  '\ud800',
  '\udc00',
  '<|endoftext|>',
];

describe('isTokenBoundary', () => {
  it('only cuts where the tokens of the parts are the tokens of the whole', () => {
    const random = seededRandom(20_251_123);
    let cuts = 0;
    for (let trial = 0; trial < 4_000; trial += 1) {
      let text = '';
      for (let count = 1 + Math.floor(random() * 40); count > 0; count -= 1) text += UNITS[Math.floor(random() * UNITS.length)];
      const characters = [...text];
      const parts: string[] = [];
      let start = 0;
      let index = 0;
      for (let position = 1; position < characters.length; position += 1) {
        index += characters[position - 1]!.length;
        if (isTokenBoundary(characters[position - 1]!.codePointAt(0)!, characters[position]!.codePointAt(0)!)) {
          parts.push(text.slice(start, index));
          start = index;
        }
      }
      parts.push(text.slice(start));
      cuts += parts.length - 1;
      expect(
        parts.flatMap((part) => encode(part, PLAIN_TEXT)),
        JSON.stringify(parts),
      ).toEqual(encode(text, PLAIN_TEXT));
    }
    // The rules do cut: about five times per text of twenty units.
    expect(cuts).toBeGreaterThan(10_000);
  });
});

describe('textSegments', () => {
  it('gives back a short ordinary text whole', () => {
    const text = 'A short prompt, with some punctuation and 42 numbers.';
    expect([...textSegments(text)]).toEqual([{ text, bytes: text.length }]);
  });

  it('cuts a long run into chunks, joins back to the text and never splits a surrogate pair', () => {
    const text = `Start ${'a'.repeat(1_000)} middle ${'😀'.repeat(1_000)}${' '.repeat(300)}end`;
    const segments = [...textSegments(text)].map((segment) => segment.text);
    expect(segments.join('')).toBe(text);
    expect(Math.max(...segments.map((segment) => segment.length))).toBeLessThanOrEqual(LONG_RUN_CHARACTERS);
    for (const segment of segments) {
      expect(segment.charCodeAt(0) >= 0xdc00 && segment.charCodeAt(0) <= 0xdfff).toBe(false);
      expect(segment.charCodeAt(segment.length - 1) >= 0xd800 && segment.charCodeAt(segment.length - 1) <= 0xdbff).toBe(false);
    }
  });

  it('cuts a long ordinary text into segments of about SEGMENT_BYTES at token boundaries', () => {
    for (const text of [
      'Routing picks a model for each request, and the executor calls it. '.repeat(2_000),
      '路由为每个请求选择一个模型，执行器调用它。'.repeat(2_000),
    ]) {
      const segments = [...textSegments(text)];
      expect(segments.length).toBeGreaterThan(Buffer.byteLength(text) / SEGMENT_BYTES);
      expect(segments.map((segment) => segment.text).join('')).toBe(text);
      for (const segment of segments) {
        expect(segment.bytes).toBe(Buffer.byteLength(segment.text));
        expect(segment.bytes).toBeLessThanOrEqual(SEGMENT_BYTES + 3);
      }
      expect(segments.flatMap((segment) => encode(segment.text, PLAIN_TEXT))).toEqual(encode(text, PLAIN_TEXT));
    }
  });
});
