/**
 * The simulated embedding model: a vector that is a pure function of the input, so the same text
 * always embeds to the same vector on every machine, and texts that share words are nearer than
 * texts that share none (a retrieval demo ranks sensibly). Each distinct word (lower-cased letters
 * and digits; for token-id inputs, each id) moves a few positions drawn from its text, over a faint
 * direction drawn from the whole input; the vector is at unit length. A word costs the same
 * whatever the vector's length, so a request of 2048 long inputs stays cheap. A smaller `dimensions` is the leading
 * values of the whole vector at unit length, as OpenAI's text-embedding-3 models shorten.
 */
import { setImmediate, setTimeout as sleep } from 'node:timers/promises';
import { countTextTokensAsync } from '@gateway/tokens';
import { normalized, shortened } from '../embedding-vectors.js';
import type { EmbeddingBatch, EmbeddingBatchResult, EmbeddingProvider, ProviderContext } from '../provider.js';
import { UpstreamError } from '../upstream-error.js';
import { SeededRandom } from './seeded-random.js';

/** The words of a text, as the simulated model reads them. */
const WORD = /[\p{L}\p{N}]+/gu;

/** How long a vector an embedding model of the catalog gives when its entry says nothing (never: the loader requires it). */
const FALLBACK_DIMENSIONS = 1536;

/** How many positions of the vector each distinct word moves: the cost of a word, whatever the vector's length. */
const WORD_POSITIONS = 32;

/** How much of the vector is the whole input's own faint direction (no vector, nor its leading values, is ever zero). */
const BASE_WEIGHT = 0.1;

/** FNV-1a of a text's UTF-16 units: a word's seed, cheap enough to take per word. */
function wordSeed(word: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < word.length; index += 1) hash = Math.imul(hash ^ word.charCodeAt(index), 0x01000193);
  return hash >>> 0;
}

/** mulberry32: the next state and a float in [0, 1). */
function nextRandom(state: { seed: number }): number {
  state.seed = (state.seed + 0x6d2b79f5) | 0;
  let value = Math.imul(state.seed ^ (state.seed >>> 15), 1 | state.seed);
  value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
  return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
}

/**
 * The whole-length vector of a list of words: each distinct word adds its count, with a sign, at
 * WORD_POSITIONS positions drawn from the word (so texts that share words share those), over a
 * faint direction drawn from the whole input; at unit length.
 */
export function simulatedVector(words: readonly string[], dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions);
  const base = new SeededRandom(`embedding:${words.join(' ')}`);
  for (let index = 0; index < dimensions; index += 1) vector[index] = (base.next() * 2 - 1) * BASE_WEIGHT;
  const counts = new Map<string, number>();
  for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
  for (const [word, count] of counts) {
    const state = { seed: wordSeed(word) };
    for (let step = 0; step < WORD_POSITIONS; step += 1) {
      const position = Math.floor(nextRandom(state) * dimensions);
      vector[position] = vector[position]! + (nextRandom(state) < 0.5 ? -count : count);
    }
  }
  return normalized(vector);
}

/** The words of a text input. */
export function wordsOfText(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

/** The simulated provider's embeddings. */
export class SimulatedEmbeddings implements EmbeddingProvider {
  /** As OpenAI's /v1/embeddings. */
  readonly batchSize = 2048;

  async embed(batch: EmbeddingBatch, context: ProviderContext): Promise<EmbeddingBatchResult> {
    const { model } = context;
    const dimensions = model.embedding?.dimensions ?? FALLBACK_DIMENSIONS;
    if (batch.dimensions > dimensions) {
      throw new UpstreamError(`dimensions must be at most ${dimensions} for ${model.id}`, { provider: 'simulated', kind: 'http', status: 400 });
    }
    context.signal.throwIfAborted();
    const latencyMs = model.simulation?.time_to_first_token_ms ?? 0;
    if (latencyMs > 0) await sleep(latencyMs, undefined, { signal: context.signal });
    let promptTokens = 0;
    const vectors: Float32Array[] = [];
    // The event loop gets a turn between inputs: 2048 long inputs never hold it for their whole run.
    for (const text of batch.texts) {
      promptTokens += await countTextTokensAsync(text);
      vectors.push(shortened(simulatedVector(wordsOfText(text), dimensions), batch.dimensions));
      await setImmediate(undefined, { signal: context.signal });
    }
    for (const tokens of batch.tokenArrays) {
      promptTokens += tokens.length;
      vectors.push(
        shortened(
          simulatedVector(
            tokens.map((id) => `#${id}`),
            dimensions,
          ),
          batch.dimensions,
        ),
      );
      await setImmediate(undefined, { signal: context.signal });
    }
    return { vectors, promptTokens };
  }
}
