/**
 * Embeddings on Amazon Bedrock: InvokeModel (POST {base_url}/model/{modelId}/invoke), signed like
 * Converse, with the body of the model's family, told by its id (a foundation model id, an
 * inference profile or an ARN ending in it):
 * - Amazon Titan Text Embeddings (`amazon.titan-embed-text-v2:0`, `-v1`): one text a call,
 *   `{inputText, dimensions, normalize}` (V2 only: 256, 512 or 1024 values; a smaller `dimensions`
 *   is asked as the next size up and shortened here), answered `{embedding, inputTextTokenCount}`.
 *   A batch's texts are sent a few calls at a time and their vectors kept in order.
 * - Cohere Embed (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`, `cohere.embed-v4:0`):
 *   up to 96 texts a call, `{texts, input_type: "search_document"}`, answered
 *   `{embeddings: [[...]]}` (or `{embeddings: {float: [[...]]}}` by type); its tokens are the
 *   `x-amzn-bedrock-input-token-count` header InvokeModel answers with.
 * Token-id inputs are refused before any call: both families take text.
 */
import type { Dispatcher } from 'undici';
import { GatewayError } from '@gateway/grpc';
import { shortened } from '../embedding-vectors.js';
import type { EmbeddingBatch, EmbeddingBatchResult, ProviderContext } from '../provider.js';
import { TextEmbeddings } from '../text-embeddings.js';
import { headerValue, readJsonBody } from '../upstream-http.js';
import type { CohereEmbedRequest, CohereEmbedResponse, TitanEmbedRequest, TitanEmbedResponse } from './wire-types.js';

/** The most texts one Cohere Embed call takes; Titan takes one, sent TITAN_CONCURRENCY at a time. */
export const BEDROCK_EMBEDDING_BATCH = 96;

/** How many Titan calls of one batch are in flight at once. */
const TITAN_CONCURRENCY = 4;

/** What an answer's embedding that is no vector is called in its failure. */
const NOT_A_VECTOR = 'an embedding that is no list of numbers';

/** The vector lengths Titan Text Embeddings V2 gives. */
const TITAN_V2_DIMENSIONS = [256, 512, 1024] as const;

/** What the embeddings need of their adapter: InvokeModel, signed and sent, resolving with a 2xx response. */
export interface BedrockEmbeddingTransport {
  readonly name: string;
  invoke(body: string, context: ProviderContext): Promise<Dispatcher.ResponseData>;
}

/** The embedding family of a Bedrock model id; undefined for one that is neither. */
export function embeddingFamilyOf(modelId: string): 'titan-v1' | 'titan-v2' | 'cohere' | undefined {
  if (/(?:^|[./])amazon\.titan-embed-text-v2/.test(modelId)) return 'titan-v2';
  if (/(?:^|[./])amazon\.titan-embed-text-v1/.test(modelId)) return 'titan-v1';
  if (/(?:^|[./])cohere\.embed-/.test(modelId)) return 'cohere';
  return undefined;
}

/** Bedrock's embeddings (Titan, Cohere), over the adapter's signed transport. */
export class BedrockEmbeddings extends TextEmbeddings<BedrockEmbeddingTransport> {
  readonly batchSize = BEDROCK_EMBEDDING_BATCH;

  async embed(batch: EmbeddingBatch, context: ProviderContext): Promise<EmbeddingBatchResult> {
    const { model } = context;
    const family = embeddingFamilyOf(model.upstream.model);
    if (family === undefined) {
      throw GatewayError.of(
        'model_unavailable',
        `Model ${model.id} names Bedrock model ${model.upstream.model}, which is neither a Titan Text Embeddings nor a Cohere Embed model.`,
      );
    }
    return family === 'cohere' ? await this.cohere(batch, context) : await this.titan(batch, context, family === 'titan-v2');
  }

  private async answerOf<T>(body: object, context: ProviderContext): Promise<{ answer: T | null; tokens: number | undefined }> {
    const response = await this.transport.invoke(JSON.stringify(body), context);
    const tokens = Number(headerValue(response.headers, 'x-amzn-bedrock-input-token-count') ?? Number.NaN);
    const answer = (await readJsonBody(response, this.transport.name, context.signal)) as T | null;
    return { answer, tokens: Number.isInteger(tokens) && tokens >= 0 ? tokens : undefined };
  }

  private async cohere(batch: EmbeddingBatch, context: ProviderContext): Promise<EmbeddingBatchResult> {
    const body: CohereEmbedRequest = { texts: [...batch.texts], input_type: 'search_document' };
    const { answer, tokens } = await this.answerOf<CohereEmbedResponse>(body, context);
    const embeddings = Array.isArray(answer?.embeddings) ? answer.embeddings : answer?.embeddings?.float;
    if (!Array.isArray(embeddings)) throw this.malformed('an InvokeModel answer without embeddings');
    if (embeddings.length !== batch.texts.length) throw this.malformed(`${embeddings.length} embeddings for ${batch.texts.length} texts`);
    return { vectors: embeddings.map((values) => this.vectorOf(values, NOT_A_VECTOR)), promptTokens: tokens };
  }

  private async titan(batch: EmbeddingBatch, context: ProviderContext, v2: boolean): Promise<EmbeddingBatchResult> {
    // V2 gives 256, 512 or 1024 values: the smallest that holds the asked length, shortened after.
    const asked = v2 && batch.dimensions > 0 ? TITAN_V2_DIMENSIONS.find((size) => size >= batch.dimensions) : undefined;
    const vectors = new Array<Float32Array>(batch.texts.length);
    let tokens: number | undefined = 0;
    let next = 0;
    let failed = false;
    const worker = async () => {
      // A failed call fails the batch: the other workers take no further text.
      while (next < batch.texts.length && !failed) {
        const index = next;
        next += 1;
        const body: TitanEmbedRequest = { inputText: batch.texts[index]!, ...(v2 ? { normalize: true, ...(asked ? { dimensions: asked } : {}) } : {}) };
        const { answer } = await this.answerOf<TitanEmbedResponse>(body, context).catch((error: unknown) => {
          failed = true;
          throw error;
        });
        if (typeof answer !== 'object' || answer === null) throw this.malformed('an InvokeModel answer that is not an object');
        vectors[index] = shortened(this.vectorOf(answer.embedding, NOT_A_VECTOR), batch.dimensions);
        const count = answer.inputTextTokenCount;
        tokens = tokens !== undefined && typeof count === 'number' && Number.isInteger(count) && count >= 0 ? tokens + count : undefined;
      }
    };
    await Promise.all(Array.from({ length: Math.min(TITAN_CONCURRENCY, batch.texts.length) }, worker));
    return { vectors, promptTokens: tokens };
  }
}
