/**
 * Vertex AI's wire types beyond its publishers' own: a Claude request on Vertex is Anthropic's
 * Messages body without `model` and with `anthropic_version`; Gemini on Vertex uses the Gemini
 * API's types unchanged (providers/gemini/wire-types.ts).
 */
import type { AnthropicRequest } from '../anthropic/wire-types.js';

/** The Messages API version Anthropic's models on Vertex AI take, in the body. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** The body of rawPredict / streamRawPredict. */
export type VertexAnthropicRequest = Omit<AnthropicRequest, 'model'> & { anthropic_version: string };

/** The body of :predict on a text-embedding model (Vertex AI's text embeddings API). */
export interface VertexPredictEmbeddingsRequest {
  instances: Array<{ content: string; task_type?: string; title?: string }>;
  parameters?: { outputDimensionality?: number; autoTruncate?: boolean };
}

/** The answer of :predict on a text-embedding model: one prediction per instance, in order. */
export interface VertexPredictEmbeddingsResponse {
  predictions?: Array<{ embeddings?: { values?: number[]; statistics?: { token_count?: number; truncated?: boolean } } }>;
  metadata?: { billableCharacterCount?: number };
}
