/**
 * POST {base_url}/embeddings for the OpenAI-compatible adapter (OpenAI's CreateEmbeddingRequest),
 * vectors asked as base64 float32 (read as numbers too, from a server that ignores the encoding)
 * and put back in the order of `index`.
 */
import type { CatalogModel } from '@gateway/catalog';
import type { EmbeddingBatch, EmbeddingBatchResult, EmbeddingProvider, ProviderContext } from '../provider.js';
import { vectorOfBytes, vectorOfNumbers } from '../embedding-vectors.js';
import { UpstreamError } from '../upstream-error.js';
import type { EmbeddingTransport } from '../http-provider.js';
import type { OpenAiEmbeddingRequest, OpenAiEmbeddingResponse } from './wire-types.js';

/** The most inputs OpenAI's /v1/embeddings takes in one request. */
export const OPENAI_EMBEDDING_BATCH = 2048;

/** Where a model's embeddings are asked: `{base_url}/embeddings`, the base URL's path and query kept. */
export function openAiEmbeddingsUrl(upstream: CatalogModel['upstream']): URL {
  // The base URL's path and query kept, as for /chat/completions (Azure-style `?api-version=`).
  const base = new URL(upstream.base_url ?? '');
  return new URL(`${base.pathname.replace(/\/+$/, '')}/embeddings${base.search}`, base.origin);
}

/** The OpenAI-compatible embeddings, over the adapter's transport, at the URL `urlOf` gives (Azure has its own shape). */
export class OpenAiCompatibleEmbeddings implements EmbeddingProvider {
  readonly batchSize = OPENAI_EMBEDDING_BATCH;

  constructor(
    private readonly transport: EmbeddingTransport,
    private readonly urlOf: (upstream: CatalogModel['upstream']) => URL = openAiEmbeddingsUrl,
  ) {}

  async embed(batch: EmbeddingBatch, context: ProviderContext): Promise<EmbeddingBatchResult> {
    const { model } = context;
    const body: OpenAiEmbeddingRequest = {
      model: model.upstream.model,
      input: batch.texts.length > 0 ? [...batch.texts] : batch.tokenArrays.map((tokens) => [...tokens]),
      encoding_format: 'base64',
      ...(batch.dimensions > 0 ? { dimensions: batch.dimensions } : {}),
      ...(batch.user ? { user: batch.user } : {}),
    };
    const url = this.urlOf(model.upstream);
    const answer = await this.transport.postForWhole<OpenAiEmbeddingResponse>(
      { url, body: JSON.stringify(body) },
      context,
      (parsed) => Array.isArray(parsed.data),
      'upstream sent an embeddings response without data',
    );
    const count = body.input.length;
    const vectors = vectorsInOrder(answer, count, this.transport.name);
    const promptTokens = answer.usage?.prompt_tokens;
    return { vectors, promptTokens: typeof promptTokens === 'number' && Number.isInteger(promptTokens) && promptTokens >= 0 ? promptTokens : undefined };
  }
}

/** The response's vectors by `index`, one per input; anything else is a malformed answer. */
function vectorsInOrder(answer: OpenAiEmbeddingResponse, count: number, provider: string): Float32Array[] {
  const malformed = (what: string) => new UpstreamError(`upstream sent ${what}`, { provider, kind: 'malformed' });
  const data = answer.data ?? [];
  if (data.length !== count) throw malformed(`${data.length} embeddings for ${count} inputs`);
  const vectors = new Array<Float32Array | undefined>(count);
  data.forEach((item, position) => {
    const index = item.index ?? position;
    if (!Number.isInteger(index) || index < 0 || index >= count || vectors[index]) throw malformed('an embedding with a bad or repeated index');
    const value = item.embedding;
    const vector = typeof value === 'string' ? vectorOfBytes(Buffer.from(value, 'base64')) : vectorOfNumbers(value);
    if (!vector || vector.length === 0) throw malformed('an embedding that is neither base64 float32 nor a list of numbers');
    vectors[index] = vector;
  });
  return vectors as Float32Array[];
}
