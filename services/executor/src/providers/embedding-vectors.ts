/**
 * Vectors as every embedding adapter reads and shapes them: little-endian float32 (OpenAI's
 * base64 encoding, and EmbedResponse's bytes), and shortened to a smaller `dimensions` as
 * OpenAI's and Google's shortenable models do it (the leading values, scaled back to unit length).
 */

/** A vector sent as a JSON list of numbers; undefined for anything else, or an empty list. */
export function vectorOfNumbers(values: unknown): Float32Array | undefined {
  if (!Array.isArray(values) || values.length === 0 || !values.every((value) => typeof value === 'number')) return undefined;
  return Float32Array.from(values);
}

/** A vector's values as little-endian float32 bytes. */
export function float32Bytes(vector: Float32Array): Uint8Array {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  for (let index = 0; index < vector.length; index += 1) view.setFloat32(index * 4, vector[index]!, true);
  return bytes;
}

/** The vector of little-endian float32 bytes; undefined when their length is not a multiple of 4. */
export function vectorOfBytes(bytes: Uint8Array): Float32Array | undefined {
  if (bytes.length % 4 !== 0) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const vector = new Float32Array(bytes.length / 4);
  for (let index = 0; index < vector.length; index += 1) vector[index] = view.getFloat32(index * 4, true);
  return vector;
}

/** A vector scaled to unit length (a zero vector stays as it is). */
export function normalized(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const value of vector) sum += value * value;
  if (sum === 0) return vector;
  const scale = 1 / Math.sqrt(sum);
  for (let index = 0; index < vector.length; index += 1) vector[index] = vector[index]! * scale;
  return vector;
}

/** The first `dimensions` values of a vector at unit length: a shortened embedding (0: the whole vector). */
export function shortened(vector: Float32Array, dimensions: number): Float32Array {
  if (dimensions <= 0 || dimensions >= vector.length) return vector;
  return normalized(vector.slice(0, dimensions));
}
