/**
 * OpenAI's embeddings wire (POST /v1/embeddings) on the completion pipeline: the body parsed by
 * parseEmbeddingsRequest, admitted (its input tokens against the key's tokens per minute),
 * routed (an embedding model only), run by the executor's Embed and reported (metering prices the
 * input tokens) as a completion is, and answered as OpenAI's CreateEmbeddingResponse with the
 * `gateway` object. Vectors travel from the executor as little-endian float32: `base64` sends
 * those bytes as they are, `float` writes each value as the JSON number of that float32, so both
 * encodings carry exactly the same values.
 */
import type { EmbedRequest, EmbedResponseOutput } from '@gateway/proto';
import type { Completion, CompletionWire, StreamRenderer, WholeAnswer } from '../completions/completion.js';
import { embeddingInputTokens } from '../completions/model-resolution.js';
import { errorBody } from '../errors.js';
import { gatewayInfo } from './chat-completions-wire.js';
import { type ParsedEmbeddingRequest, parseEmbeddingsRequest } from './parse-embeddings-request.js';

/** The JSON numbers of a vector's little-endian float32 bytes, comma-separated. */
export function floatValues(bytes: Uint8Array): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const values = new Array<string>(bytes.byteLength >> 2);
  for (let index = 0; index < values.length; index += 1) {
    const value = view.getFloat32(index * 4, true);
    // JSON has no NaN or infinity; an upstream that sent one sent no usable vector value.
    values[index] = Number.isFinite(value) ? String(value) : '0';
  }
  return values.join(',');
}

/** How many values the edge writes as JSON numbers before it gives the event loop a turn. */
const VALUES_PER_TURN = 65_536;

/**
 * The CreateEmbeddingResponse body, the `gateway` object last. Writing numbers costs about a
 * third of a microsecond a value, so 2048 vectors of 1536 take a second: the event loop gets a turn
 * every VALUES_PER_TURN values. base64 is a copy of the bytes.
 */
async function embeddingsJson(completion: Completion<ParsedEmbeddingRequest>, response: EmbedResponseOutput): Promise<string> {
  const base64 = completion.parsed.embeddings.encoding === 'base64';
  const data: string[] = [];
  let written = 0;
  for (const [index, embedding] of (response.embeddings ?? []).entries()) {
    const bytes = embedding.float32_le ?? new Uint8Array(0);
    if (base64) {
      data.push(`{"object":"embedding","index":${index},"embedding":"${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')}"}`);
      continue;
    }
    data.push(`{"object":"embedding","index":${index},"embedding":[${floatValues(bytes)}]}`);
    written += bytes.byteLength >> 2;
    if (written >= VALUES_PER_TURN) {
      written = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  const tokens = completion.usage?.prompt_tokens ?? 0;
  const model = JSON.stringify(completion.answered.id ?? '');
  return `{"object":"list","data":[${data.join(',')}],"model":${model},"usage":{"prompt_tokens":${tokens},"total_tokens":${tokens}},"gateway":${JSON.stringify(gatewayInfo(completion))}}`;
}

/** The executor's Embed call of a routed request. */
function embedRequestOf(completion: Completion<ParsedEmbeddingRequest>): EmbedRequest {
  const { embeddings } = completion.parsed;
  return {
    request_id: completion.requestId,
    model_id: completion.routing.model.id,
    key_id: completion.decision.key_id,
    texts: embeddings.texts,
    token_arrays: embeddings.tokenArrays.map((tokens) => ({ tokens })),
    dimensions: embeddings.dimensions,
    user: embeddings.user,
  };
}

/** An Embed answer (the executor's, or one the response cache kept) as the pipeline reports and renders it. */
function embeddingsAnswer(completion: Completion<ParsedEmbeddingRequest>, response: EmbedResponseOutput): WholeAnswer {
  return {
    model_id: response.model_id,
    provider: response.provider,
    deployment_id: response.deployment_id,
    attempts: response.attempts,
    usage: response.usage,
    embeddings: response,
    render: async () => {
      const body = await embeddingsJson(completion, response);
      void completion.reply
        .header('content-type', 'application/json')
        .header('openai-processing-ms', String(Math.round(completion.latencyMs)))
        .header('openai-model', completion.answered.id ?? '');
      return body;
    },
  };
}

/** The embeddings API: whole answers only. */
export const embeddingsWire: CompletionWire<ParsedEmbeddingRequest> = {
  route: '/v1/embeddings',
  operation: 'embeddings',
  parse: parseEmbeddingsRequest,
  promptTokens: embeddingInputTokens,
  async executeWhole(deps, completion, options): Promise<WholeAnswer> {
    return embeddingsAnswer(completion, await deps.completions.call('embed', embedRequestOf(completion), options));
  },
  cachedWhole: (completion, entry) => embeddingsAnswer(completion, entry.embeddings ?? { embeddings: [], attempts: [] }),
  renderWhole(): string {
    throw new Error('embeddings are rendered by executeWhole');
  },
  openStream(): StreamRenderer {
    throw new Error('embeddings are never streamed');
  },
  renderError: errorBody,
};
