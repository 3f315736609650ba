/**
 * The vectors of semantic lookups: a question's embedding as the edge sends it (little-endian
 * float32 bytes) read into a Float32Array scaled to length 1, so that the cosine similarity of two
 * of them is their dot product.
 */

/** The most dimensions a vector may have (the largest embedding models have a few thousand). */
export const MAX_DIMENSIONS = 16_384;

/**
 * The vector of little-endian float32 `bytes`, normalized to length 1; undefined when they are no
 * such vector: empty, not a whole number of float32s, over MAX_DIMENSIONS, a value not finite, or
 * all zeros (which has no direction to compare).
 */
export function unitVector(bytes: Uint8Array): Float32Array | undefined {
  if (bytes.byteLength === 0 || bytes.byteLength % 4 !== 0 || bytes.byteLength / 4 > MAX_DIMENSIONS) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const vector = new Float32Array(bytes.byteLength / 4);
  let squares = 0;
  for (let index = 0; index < vector.length; index++) {
    const value = view.getFloat32(index * 4, true);
    if (!Number.isFinite(value)) return undefined;
    vector[index] = value;
    squares += value * value;
  }
  if (!(squares > 0)) return undefined;
  const scale = 1 / Math.sqrt(squares);
  for (let index = 0; index < vector.length; index++) vector[index]! *= scale;
  return vector;
}

/** The little-endian float32 bytes of a vector (what unitVector reads). */
export function vectorBytes(vector: Float32Array | readonly number[]): Uint8Array {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  for (let index = 0; index < vector.length; index++) view.setFloat32(index * 4, vector[index]!, true);
  return bytes;
}

/** The dot product of two vectors of the same length: their cosine similarity when both are normalized. */
export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let index = 0; index < a.length; index++) sum += a[index]! * b[index]!;
  return sum;
}
