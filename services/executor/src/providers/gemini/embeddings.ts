/**
 * Embeddings on Google's Gemini API: one input by models.embedContent, several by
 * models.batchEmbedContents (at most 100 requests a call, each naming the model), with
 * `outputDimensionality` for a smaller `dimensions`. The API reports no token count for
 * embeddings: the executor counts the inputs with the gateway's tokenizer. Token-id inputs are
 * refused before any call: Gemini's models take text.
 */
import type { EmbeddingTransport } from '../http-provider.js';
import type { EmbeddingBatch, EmbeddingBatchResult, ProviderContext } from '../provider.js';
import { TextEmbeddings } from '../text-embeddings.js';
import { upstreamUrl } from '../upstream-http.js';
import type {
  GeminiBatchEmbedContentsRequest,
  GeminiBatchEmbedContentsResponse,
  GeminiContentEmbedding,
  GeminiEmbedContentRequest,
  GeminiEmbedContentResponse,
} from './wire-types.js';

/** The most requests batchEmbedContents takes in one call. */
export const GEMINI_EMBEDDING_BATCH = 100;

/** Used when a catalog model names no base_url. */
const DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com';

/** The Gemini API's embeddings, over the adapter's transport. */
export class GeminiEmbeddings extends TextEmbeddings<EmbeddingTransport> {
  readonly batchSize = GEMINI_EMBEDDING_BATCH;

  async embed(batch: EmbeddingBatch, context: ProviderContext): Promise<EmbeddingBatchResult> {
    const { model } = context;
    const name = `models/${model.upstream.model.replace(/^models\//, '')}`;
    const base = model.upstream.base_url ?? DEFAULT_BASE_URL;
    const requestOf = (text: string, inBatch: boolean): GeminiEmbedContentRequest => ({
      ...(inBatch ? { model: name } : {}),
      content: { parts: [{ text }] },
      ...(batch.dimensions > 0 ? { outputDimensionality: batch.dimensions } : {}),
    });
    let embeddings: GeminiContentEmbedding[];
    if (batch.texts.length === 1) {
      const url = upstreamUrl(base, 'v1beta', `${name}:embedContent`);
      const answer = await this.transport.postForWhole<GeminiEmbedContentResponse>(
        { url, body: JSON.stringify(requestOf(batch.texts[0]!, false)) },
        context,
        (body) => typeof body.embedding === 'object' && body.embedding !== null,
        'upstream sent an EmbedContentResponse without embedding',
      );
      embeddings = [answer.embedding!];
    } else {
      const url = upstreamUrl(base, 'v1beta', `${name}:batchEmbedContents`);
      const body: GeminiBatchEmbedContentsRequest = { requests: batch.texts.map((text) => requestOf(text, true)) };
      const answer = await this.transport.postForWhole<GeminiBatchEmbedContentsResponse>(
        { url, body: JSON.stringify(body) },
        context,
        (parsed) => Array.isArray(parsed.embeddings),
        'upstream sent a BatchEmbedContentsResponse without embeddings',
      );
      embeddings = answer.embeddings!;
      if (embeddings.length !== batch.texts.length) throw this.malformed(`${embeddings.length} embeddings for ${batch.texts.length} inputs`);
    }
    const vectors = embeddings.map((embedding) => this.vectorOf(embedding?.values, 'an embedding without values'));
    return { vectors, promptTokens: undefined };
  }
}
