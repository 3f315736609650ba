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
}
