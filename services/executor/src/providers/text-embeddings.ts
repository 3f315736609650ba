/**
 * What the embeddings of the clouds' text-only models (Gemini, Vertex AI, Bedrock) share: they
 * refuse token-id inputs, call through their adapter's transport, and read every vector of the
 * answer as a list of numbers, an answer of any other shape being a `malformed` failure.
 */
import { vectorOfNumbers } from './embedding-vectors.js';
import type { EmbeddingBatch, EmbeddingBatchResult, EmbeddingProvider, ProviderContext } from './provider.js';
import { UpstreamError } from './upstream-error.js';

/** Embeddings of text only, over `Transport`, the adapter's own (named as the provider). */
export abstract class TextEmbeddings<Transport extends { readonly name: string }> implements EmbeddingProvider {
  abstract readonly batchSize: number;
  readonly textOnly = true;

  constructor(protected readonly transport: Transport) {}

  abstract embed(batch: EmbeddingBatch, context: ProviderContext): Promise<EmbeddingBatchResult>;

  /** The failure of an answer the API does not send: "upstream sent `what`". */
  protected malformed(what: string): UpstreamError {
    return new UpstreamError(`upstream sent ${what}`, { provider: this.transport.name, kind: 'malformed' });
  }

  /** The vector of a list of numbers; anything else fails as `malformed` with `what`. */
  protected vectorOf(values: unknown, what: string): Float32Array {
    const vector = vectorOfNumbers(values);
    if (!vector) throw this.malformed(what);
    return vector;
  }
}
