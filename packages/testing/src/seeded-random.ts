/** Numbers for tests that must be the same on every run: a seeded generator, so a failure repeats. */

/** mulberry32: a generator of floats in [0, 1) from `seed`, the same sequence for the same seed. */
export function seededRandom(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}
