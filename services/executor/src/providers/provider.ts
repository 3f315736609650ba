/**
 * The one interface every provider adapter implements. An adapter turns a validated chat request
 * into the upstream's wire format and back; it never throws a GatewayError for an upstream failure:
 * it throws an UpstreamError, and the gRPC boundary converts it (see to-gateway-error.ts).
 */
import type { CatalogModel } from '@gateway/catalog';
import type { ChatChunk, ChatRequestOutput, ChatResponse, Usage } from '@gateway/proto';

/** What an adapter needs besides the request. */
export interface ProviderContext {
  /** The catalog model that serves the request; the adapter reads its upstream data. */
  readonly model: CatalogModel;
  /** Aborted when the caller went away or the call ended: every upstream I/O and timer honours it. */
  readonly signal: AbortSignal;
  /** The edge's request id, for upstream logs; never a secret. */
  readonly requestId: string;
  /** The executor's span of this upstream call, as a W3C traceparent: sent as the `traceparent` header. */
  readonly traceparent?: string;
}

/**
 * One event of a provider stream: a chunk to forward as it arrives, or the usage of the whole
 * stream. A stream that completes has yielded exactly one `usage` event, last: the answer is whole
 * once it came, even if the upstream's response has not ended yet (the caller still pulls the
 * iterator to its end, so that the connection goes back to the pool). Usage-only upstream chunks
 * are never yielded as chunks: the usage travels in the StreamEnd instead.
 */
export type ProviderStreamEvent = { readonly type: 'chunk'; readonly chunk: ChatChunk } | { readonly type: 'usage'; readonly usage: Usage };

/**
 * One upstream call's worth of an embeddings request: at most the adapter's batch of inputs, all
 * text or all token ids (exactly one of the two lists is non-empty).
 */
export interface EmbeddingBatch {
  readonly texts: readonly string[];
  readonly tokenArrays: readonly (readonly number[])[];
  /** The vectors' length the caller asked for; 0: the model's own. */
  readonly dimensions: number;
  /** The caller's end-user id (OpenAI's `user`); '' when none. */
  readonly user: string;
}

/** The vectors of a batch, in its inputs' order, and the input tokens the upstream reported. */
export interface EmbeddingBatchResult {
  readonly vectors: readonly Float32Array[];
  /** The upstream's count of the batch's input tokens; undefined when it reports none (the executor counts). */
  readonly promptTokens: number | undefined;
}

/**
 * What an adapter implements to serve embedding models (a catalog model of kind `embedding`). The
 * executor splits a request into batches of at most `batchSize` inputs (or the catalog's
 * embedding.batch_size), calls `embed` for each and joins the vectors in order; a failed batch
 * fails the request, with the adapter's UpstreamError as for completions.
 */
export interface EmbeddingProvider {
  /** The most inputs one upstream call takes. */
  readonly batchSize: number;
  /** The upstream takes text only: token-id inputs are refused (400) before any call. */
  readonly textOnly?: boolean;
  /** Embeds one batch; rejects with an UpstreamError. */
  embed(batch: EmbeddingBatch, context: ProviderContext): Promise<EmbeddingBatchResult>;
}

/** A provider adapter. */
export interface Provider {
  /** The name reported in ExecuteResponse.provider and StreamEnd.provider ("simulated", ...). */
  readonly name: string;
  /** Runs the request and resolves with the whole response; rejects with an UpstreamError. */
  complete(request: ChatRequestOutput, context: ProviderContext): Promise<ChatResponse>;
  /**
   * Runs the request as a stream. The iterator is pulled, never pushed: an event is produced only
   * when the caller asks for the next one, which is how backpressure reaches the upstream. Leaving
   * the loop early (return) releases the upstream connection. Failures reject with an UpstreamError.
   */
  stream(request: ChatRequestOutput, context: ProviderContext): AsyncIterable<ProviderStreamEvent>;
  /** The adapter's embeddings; absent for a provider without them (its models are chat only). */
  readonly embeddings?: EmbeddingProvider;
}
