/**
 * The simulated embedding model: a vector that is a pure function of the input, so the same text
 * always embeds to the same vector on every machine, and texts that share words are nearer than
 * texts that share none (a retrieval demo ranks sensibly). Each word (lower-cased letters and
 * digits; for token-id inputs, each id) draws a deterministic pseudo-random direction from its
 * text; the input's vector is their sum at unit length. A smaller `dimensions` is the leading
 * values of the whole vector at unit length, as OpenAI's text-embedding-3 models shorten.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { countTextTokensAsync } from '@gateway/tokens';
import { normalized, shortened } from '../embedding-vectors.js';
import type { EmbeddingBatch, EmbeddingBatchResult, EmbeddingProvider, ProviderContext } from '../provider.js';
import { UpstreamError } from '../upstream-error.js';
import { SeededRandom } from './seeded-random.js';

/** The words of a text, as the simulated model reads them. */
const WORD = /[\p{L}\p{N}]+/gu;

/** How long a vector an embedding model of the catalog gives when its entry says nothing (never: the loader requires it). */
const FALLBACK_DIMENSIONS = 1536;

/** The whole-length vector of a list of words (an empty list: the direction of the empty text). */
export function simulatedVector(words: readonly string[], dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions);
  for (const word of words.length > 0 ? words : ['']) {
    const random = new SeededRandom(`embedding:${word}`);
    for (let index = 0; index < dimensions; index += 1) vector[index] = vector[index]! + (random.next() * 2 - 1);
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
    for (const text of batch.texts) {
      promptTokens += await countTextTokensAsync(text);
      vectors.push(shortened(simulatedVector(wordsOfText(text), dimensions), batch.dimensions));
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
    }
    return { vectors, promptTokens };
  }
}
