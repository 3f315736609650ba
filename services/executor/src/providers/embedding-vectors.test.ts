import { describe, expect, it } from 'vitest';
import { batchesOf } from '../completion/embedding-run.js';
import { float32Bytes, normalized, shortened, vectorOfBytes } from './embedding-vectors.js';
import { simulatedVector, wordsOfText } from './simulated/simulated-embeddings.js';

describe('embedding vectors', () => {
  it('writes little-endian float32, as OpenAI base64 carries it, and reads it back', () => {
    const vector = Float32Array.from([1, -0.5, 0.0023064255]);
    const bytes = float32Bytes(vector);
    expect(Buffer.from(bytes).toString('base64')).toBe('AACAPwAAAL9mJxc7');
    expect(Array.from(vectorOfBytes(bytes)!)).toEqual(Array.from(vector));
    expect(vectorOfBytes(new Uint8Array(6))).toBeUndefined();
  });

  it('shortens to the leading values at unit length, and keeps a vector no longer than asked', () => {
    const vector = normalized(Float32Array.from([3, 4, 12]));
    const short = shortened(vector, 2);
    expect(short).toHaveLength(2);
    expect(short[0]).toBeCloseTo(0.6, 6);
    expect(short[1]).toBeCloseTo(0.8, 6);
    expect(shortened(vector, 0)).toBe(vector);
    expect(shortened(vector, 3)).toBe(vector);
  });
});

describe('the simulated embedding', () => {
  it('is a pure function of the words: the same text the same vector, another text another', () => {
    const a = simulatedVector(wordsOfText('The cat sat.'), 64);
    expect(Array.from(simulatedVector(wordsOfText('the CAT, sat'), 64))).toEqual(Array.from(a));
    expect(Array.from(simulatedVector(wordsOfText('A dog ran.'), 64))).not.toEqual(Array.from(a));
    expect(Math.hypot(...a)).toBeCloseTo(1, 5);
  });
});

describe('batchesOf', () => {
  it('splits inputs into consecutive batches of at most the limit, in order', () => {
    const texts = ['a', 'b', 'c', 'd', 'e'];
    expect(batchesOf({ texts, tokenArrays: [], dimensions: 8, user: 'u' }, 2).map((batch) => batch.texts)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(batchesOf({ texts: [], tokenArrays: [[1], [2], [3]], dimensions: 0, user: '' }, 3).map((batch) => batch.tokenArrays)).toEqual([[[1], [2], [3]]]);
  });
});
