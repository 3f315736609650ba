/** Reading a question's vector from the edge's bytes: normalized, and refused when it is no vector. */
import { describe, expect, it } from 'vitest';
import { dot, MAX_DIMENSIONS, unitVector, vectorBytes } from './vectors.js';

describe('unitVector', () => {
  it('reads little-endian float32s and scales them to length 1', () => {
    const vector = unitVector(vectorBytes([3, 4]))!;
    expect(Array.from(vector)).toEqual([expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)]);
    expect(dot(vector, vector)).toBeCloseTo(1, 6);
  });

  it('reads bytes that do not start their buffer', () => {
    const bytes = vectorBytes([1, 0, 0]);
    const shifted = new Uint8Array(bytes.byteLength + 3);
    shifted.set(bytes, 3);
    expect(Array.from(unitVector(shifted.subarray(3))!)).toEqual([1, 0, 0]);
  });

  it('refuses what is no vector: empty, not whole float32s, too long, not finite, all zeros', () => {
    expect(unitVector(new Uint8Array(0))).toBeUndefined();
    expect(unitVector(new Uint8Array(6))).toBeUndefined();
    expect(unitVector(new Uint8Array((MAX_DIMENSIONS + 1) * 4))).toBeUndefined();
    expect(unitVector(vectorBytes([1, Number.NaN]))).toBeUndefined();
    expect(unitVector(vectorBytes([1, Number.POSITIVE_INFINITY]))).toBeUndefined();
    expect(unitVector(vectorBytes([0, 0, 0]))).toBeUndefined();
  });
});

describe('dot', () => {
  it('is the cosine similarity of normalized vectors', () => {
    const [a, b] = [unitVector(vectorBytes([1, 0]))!, unitVector(vectorBytes([1, 1]))!];
    expect(dot(a, b)).toBeCloseTo(Math.SQRT1_2, 6);
  });
});
