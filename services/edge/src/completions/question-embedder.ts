/**
 * The embedding step of a semantic cache lookup: embeds a request's question with its settings'
 * semantic model through the executor (the edge's CompleteCalls streams, as /v1/embeddings does),
 * within EDGE_CACHE_SEMANTIC_DEADLINE_MS, and publishes the embedding's usage event to the
 * request's key and team like any embedding's. A failure or a late answer leaves the request to
 * its exact lookup: never a failed or a much slower request.
 */
import { costPicoUsd } from '@gateway/catalog';
import type { CallOptions } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { EmbedRequest, EmbedResponseOutput, UsageEvent } from '@gateway/proto';
import type { CatalogView } from '../catalog-view.js';
import type { Completion } from './completion.js';
import { questionEmbeddingEvent } from './usage-report.js';

/** What the embedding step uses of the edge. */
export interface QuestionEmbedderDependencies {
  /** The executor's Embed, as the edge calls it (ExecutorCalls' `embed`). */
  embed(request: EmbedRequest, options: CallOptions): Promise<EmbedResponseOutput>;
  usage: { publish(event: UsageEvent): void };
  catalog: CatalogView;
  /** How long the embedding may take (ms). */
  deadlineMs: number;
  logger: Logger;
}

/** Embeds a question for its semantic lookup; resolves its vector (little-endian float32), or undefined when it could not be made. */
export async function embedQuestion(deps: QuestionEmbedderDependencies, completion: Completion, model: string, text: string): Promise<Uint8Array | undefined> {
  const receivedAtMs = Date.now();
  const started = performance.now();
  let response: EmbedResponseOutput;
  try {
    response = await deps.embed(
      { request_id: completion.requestId, model_id: model, key_id: completion.decision.key_id ?? '', texts: [text] },
      {
        deadlineMs: deps.deadlineMs,
        requestId: completion.requestId,
        signal: completion.signal,
        ...(completion.traceparent && { traceparent: completion.traceparent }),
      },
    );
  } catch (error) {
    deps.logger.warn({ err: (error as Error).message, model }, 'the semantic cache could not embed a question; the request is looked up exactly only');
    return undefined;
  }
  const entry = deps.catalog.get(response.model_id || model);
  const costPico = costPicoUsd((entry?.provider_pricing?.[response.provider ?? ''] ?? entry?.pricing ?? {}) as never, response.usage ?? {});
  deps.usage.publish(questionEmbeddingEvent(completion, { model, response, receivedAtMs, latencyMs: performance.now() - started, costPico }));
  const vector = response.embeddings[0]?.float32_le;
  return vector && vector.byteLength > 0 ? vector : undefined;
}
