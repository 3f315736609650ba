/**
 * A small deterministic pseudo-random generator (sfc32 seeded from SHA-256), so the simulated
 * provider produces the same output for the same inputs on every machine and Node version.
 * Not for anything secret.
 */
import { createHash, type Hash } from 'node:crypto';

/** A deterministic random source seeded from any text. */
export class SeededRandom {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /**
   * Seeds the generator from a text; equal texts give equal sequences. A SeedPrefix seeds it from
   * the prefix's text followed by `suffix`, as the whole text would.
   */
  constructor(seedText: string | SeedPrefix, suffix = '') {
    const digest = (typeof seedText === 'string' ? createHash('sha256').update(seedText) : seedText.hashCopy()).update(suffix).digest();
    this.a = digest.readUInt32LE(0);
    this.b = digest.readUInt32LE(4);
    this.c = digest.readUInt32LE(8);
    this.d = digest.readUInt32LE(12);
    // Warm up: sfc32's first outputs are correlated with the seed words.
    for (let index = 0; index < 12; index += 1) this.next();
  }

  /** A float in [0, 1). */
  next(): number {
    this.a >>>= 0;
    this.b >>>= 0;
    this.c >>>= 0;
    this.d >>>= 0;
    let t = (this.a + this.b) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.d = (this.d + 1) | 0;
    t = (t + this.d) | 0;
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** An integer in [min, max], both included. */
  integer(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** True with the given probability. */
  chance(probability: number): boolean {
    return this.next() < probability;
  }

  /** A string of the given length from the given alphabet. */
  characters(length: number, alphabet: string): string {
    let text = '';
    for (let index = 0; index < length; index += 1) text += alphabet[Math.floor(this.next() * alphabet.length)];
    return text;
  }
}

/**
 * The start of seed texts that many generators share (the simulated model seeds each choice from
 * the whole conversation plus the choice's index): its hash is computed once, so seeding n
 * generators from a 16 MB conversation hashes it once, not n times. Seeds equal those of the
 * whole texts: `new SeededRandom(prefix.extend(a), b)` draws as `new SeededRandom(text + a + b)`.
 */
export class SeedPrefix {
  private readonly hash: Hash;

  constructor(text: string, hash: Hash = createHash('sha256')) {
    this.hash = hash.update(text);
  }

  /** A prefix that goes on with `text`. */
  extend(text: string): SeedPrefix {
    return new SeedPrefix(text, this.hash.copy());
  }

  /** A copy of the hash state after the prefix, for a generator to finish. */
  hashCopy(): Hash {
    return this.hash.copy();
  }
}
