import { describe, expect, it } from 'vitest';
import { jsonNestsDeeperThan } from './json-nesting.js';

/** The nesting depth JSON.parse finds, for comparison. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') {
      deepest = Math.max(deepest, depth);
      continue;
    }
    deepest = Math.max(deepest, depth + 1);
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}

describe('jsonNestsDeeperThan', () => {
  it('agrees with the depth JSON.parse finds, brackets and escaped quotes in strings aside', () => {
    const texts = [
      '{}',
      '[]',
      '1',
      '"["',
      '{"a":"]]]]"}',
      '{"a":"\\"[[[","b":[[1]]}',
      '{"a":"\\\\","b":[[[1]]]}',
      '{"messages":[{"role":"user","content":[{"type":"text","text":"{[{["}]}]}',
      JSON.stringify({ a: [{ b: [{ c: '\\"}]' }] }] }),
    ];
    for (const text of texts) {
      const depth = depthOf(JSON.parse(text));
      expect(jsonNestsDeeperThan(text, depth), text).toBe(false);
      if (depth > 0) expect(jsonNestsDeeperThan(text, depth - 1), text).toBe(true);
    }
  });

  it('finds a bomb of 500,000 brackets, closed or not, without parsing it', () => {
    expect(jsonNestsDeeperThan('['.repeat(500_000), 256)).toBe(true);
    expect(jsonNestsDeeperThan(`${'['.repeat(300)}1${']'.repeat(300)}`, 256)).toBe(true);
    expect(jsonNestsDeeperThan(`${'['.repeat(256)}1${']'.repeat(256)}`, 256)).toBe(false);
  });

  it('treats an unterminated string as the end of the text', () => {
    expect(jsonNestsDeeperThan('{"a":"[[[[', 2)).toBe(false);
  });

  it('skips megabytes of string content without looking at each character', () => {
    const text = JSON.stringify({ messages: [{ role: 'user', content: `[{${'x'.repeat(4_000_000)}\\"` }] });
    expect(jsonNestsDeeperThan(text, 3)).toBe(false);
    expect(jsonNestsDeeperThan(text, 2)).toBe(true);
  });
});
