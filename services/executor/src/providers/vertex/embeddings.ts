/**
 * Embeddings on Vertex AI: POST .../publishers/google/models/{model}:predict (vertex-url.ts) with
 * `{instances: [{content}], parameters: {outputDimensionality?}}` under the adapter's token, as
 * Vertex documents for its text-embedding models (text-embedding-005,
 * text-multilingual-embedding-002, gemini-embedding-001). The answer's
 * `predictions[i].embeddings.values` are the vectors in the order of the instances, and the sum of
 * their `statistics.token_count` the batch's tokens. Token-id inputs are refused before any call:
 * the models take text.
 */
import type { EmbeddingTransport } from '../http-provider.js';
import type { EmbeddingBatch, EmbeddingBatchResult, ProviderContext } from '../provider.js';
import { TextEmbeddings } from '../text-embeddings.js';
import { vertexModelUrl } from './vertex-url.js';
import type { VertexPredictEmbeddingsRequest, VertexPredictEmbeddingsResponse } from './wire-types.js';

/**
 * The most instances one :predict call takes here. Vertex allows 250 texts a call to its
 * text-embedding models but also at most 20,000 input tokens; 100 keeps a batch of long texts
 * under the latter. A model that takes one instance a call (gemini-embedding-001) sets
 * `embedding.batch_size: 1` in the catalog.
 */
export const VERTEX_EMBEDDING_BATCH = 100;

/** Vertex AI's text embeddings, over the adapter's transport. */
export class VertexEmbeddings extends TextEmbeddings<EmbeddingTransport> {
  readonly batchSize = VERTEX_EMBEDDING_BATCH;

  async embed(batch: EmbeddingBatch, context: ProviderContext): Promise<EmbeddingBatchResult> {
    const body: VertexPredictEmbeddingsRequest = {
      instances: batch.texts.map((content) => ({ content })),
      ...(batch.dimensions > 0 ? { parameters: { outputDimensionality: batch.dimensions } } : {}),
    };
    const url = vertexModelUrl(context.model.upstream, 'google', 'predict');
    const answer = await this.transport.postForWhole<VertexPredictEmbeddingsResponse>(
      { url, body: JSON.stringify(body) },
      context,
      (parsed) => Array.isArray(parsed.predictions),
      'upstream sent a prediction response without predictions',
    );
    const predictions = answer.predictions!;
    if (predictions.length !== batch.texts.length) throw this.malformed(`${predictions.length} predictions for ${batch.texts.length} instances`);
    let tokens: number | undefined = 0;
    const vectors = predictions.map((prediction) => {
      const vector = this.vectorOf(prediction?.embeddings?.values, 'a prediction without embedding values');
      const count = prediction.embeddings?.statistics?.token_count;
      tokens = tokens !== undefined && typeof count === 'number' && Number.isInteger(count) && count >= 0 ? tokens + count : undefined;
      return vector;
    });
    return { vectors, promptTokens: tokens };
  }
}
