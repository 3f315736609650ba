/**
 * Fake embedding upstreams, as responders of the fake upstream (fake-upstream.ts): OpenAI's
 * POST /v1/embeddings, the Gemini API's models/{model}:embedContent and :batchEmbedContents, and
 * Vertex AI's text-embedding :predict (behind vertexGate, which checks its token),
 * each answering as the provider documents it and refusing what the provider refuses: a missing
 * or wrong key (OpenAI's 401 for a bearer token; Gemini's 400 API_KEY_INVALID for
 * `x-goog-api-key`), more inputs than one call takes (2048; 100), an empty input, a batch request
 * naming another model than the URL. Each vector is a function of its input text (fakeVectorOf),
 * so a test knows which vector belongs to which input after splitting and joining.
 */
import type { Responder } from './fake-upstream.js';

/** A stable number of a text (FNV-1a, 20 bits: exact in a float32). */
export function fakeTextId(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash & 0xfffff;
}

/**
 * The fake's vector of an input (a text, or token ids joined by spaces): its id, its length, then
 * 0.5 and -0.25 alternating, `dimensions` values in all (at least 2). Every value is exact in float32.
 */
export function fakeVectorOf(text: string, dimensions: number): number[] {
  const vector = [fakeTextId(text), text.length];
  while (vector.length < dimensions) vector.push(vector.length % 2 === 0 ? 0.5 : -0.25);
  return vector;
}

/** Words a fake counts as tokens: one per whitespace-separated word (token ids: one each). */
function fakeTokens(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** Options of a fake embedding upstream. */
export interface FakeEmbeddingOptions {
  /** The key the upstream accepts; undefined: none checked here (a cloud's gate in front checks its auth, fake-azure.ts). */
  key?: string;
  /** The length of a vector when the request asks none. */
  dimensions?: number;
}

function json(response: Parameters<Responder>[1], status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

/** OpenAI's POST /v1/embeddings (CreateEmbeddingRequest / CreateEmbeddingResponse). */
export function fakeOpenAiEmbeddings({ key, dimensions = 8 }: FakeEmbeddingOptions): Responder {
  return (request, response) => {
    const invalid = (message: string, param: string | null = null) =>
      json(response, 400, { error: { message, type: 'invalid_request_error', param, code: null } });
    if (key !== undefined && request.headers.authorization !== `Bearer ${key}`) {
      return json(response, 401, { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    }
    if (request.method !== 'POST' || !new URL(request.path, 'http://fake').pathname.endsWith('/embeddings'))
      return json(response, 404, { error: { message: 'Not found', type: 'invalid_request_error' } });
    const {
      input,
      model,
      encoding_format: encoding,
      dimensions: asked,
    } = request.body as {
      input?: unknown;
      model?: unknown;
      encoding_format?: unknown;
      dimensions?: unknown;
    };
    if (typeof model !== 'string' || model === '') return invalid('you must provide a model parameter', 'model');
    const inputs: string[] = [];
    if (typeof input === 'string') inputs.push(input);
    else if (Array.isArray(input) && input.length > 0 && input.every((item) => typeof item === 'number')) inputs.push(input.join(' '));
    else if (Array.isArray(input)) {
      for (const item of input) {
        if (typeof item === 'string' && item !== '') inputs.push(item);
        else if (Array.isArray(item) && item.length > 0 && item.every((id) => Number.isInteger(id))) inputs.push(item.join(' '));
        else return invalid("'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", 'input');
      }
    }
    if (inputs.length === 0) return invalid("'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", 'input');
    if (inputs.length > 2048) return invalid(`'$.input' is too long: ${inputs.length} inputs. Expected at most 2048.`, 'input');
    if (encoding !== undefined && encoding !== 'float' && encoding !== 'base64')
      return invalid("'encoding_format' must be 'float' or 'base64'", 'encoding_format');
    const length = typeof asked === 'number' ? asked : dimensions;
    let tokens = 0;
    const data = inputs.map((text, index) => {
      tokens += fakeTokens(text);
      const vector = fakeVectorOf(text, length);
      const embedding = encoding === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
      return { object: 'embedding', index, embedding };
    });
    // The data in reverse order: a client must place each vector by its index, not its position.
    json(response, 200, { object: 'list', data: data.reverse(), model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
  };
}

/** The Gemini API's models/{model}:embedContent and :batchEmbedContents (v1beta). */
export function fakeGeminiEmbeddings({ key, dimensions = 8 }: FakeEmbeddingOptions): Responder {
  return (request, response) => {
    const status = (code: number, state: string, message: string, reason?: string) =>
      json(response, code, {
        error: {
          code,
          message,
          status: state,
          ...(reason ? { details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com' }] } : {}),
        },
      });
    if (key !== undefined && request.headers['x-goog-api-key'] !== key)
      return status(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', 'API_KEY_INVALID');
    const match = /^\/v1beta\/(models\/[^:/?]+):(embedContent|batchEmbedContents)$/.exec(request.path);
    if (request.method !== 'POST' || !match) return status(404, 'NOT_FOUND', 'Not found');
    const [, model, method] = match;
    type Single = { model?: unknown; content?: { parts?: Array<{ text?: unknown }> }; outputDimensionality?: unknown };
    const embed = (single: Single): number[] | string => {
      const parts = single.content?.parts;
      if (!Array.isArray(parts) || parts.length === 0 || parts.some((part) => typeof part.text !== 'string'))
        return '* EmbedContentRequest.content: contents.parts must not be empty.';
      const text = parts.map((part) => part.text as string).join('');
      if (text === '') return '* EmbedContentRequest.content: contents.parts must not be empty.';
      const length = single.outputDimensionality === undefined ? dimensions : single.outputDimensionality;
      if (typeof length !== 'number' || !Number.isInteger(length) || length < 1) return '* EmbedContentRequest.output_dimensionality: must be positive.';
      return fakeVectorOf(text, length);
    };
    if (method === 'embedContent') {
      const values = embed(request.body as Single);
      if (typeof values === 'string') return status(400, 'INVALID_ARGUMENT', values);
      return json(response, 200, { embedding: { values } });
    }
    const requests = (request.body as { requests?: Single[] }).requests;
    if (!Array.isArray(requests) || requests.length === 0) return status(400, 'INVALID_ARGUMENT', '* BatchEmbedContentsRequest.requests: must not be empty.');
    if (requests.length > 100) return status(400, 'INVALID_ARGUMENT', '* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch');
    const embeddings: Array<{ values: number[] }> = [];
    for (const [index, single] of requests.entries()) {
      if (single.model !== model)
        return status(400, 'INVALID_ARGUMENT', `* BatchEmbedContentsRequest.requests[${index}].model: the model must be the same as the batch's (${model}).`);
      const values = embed(single);
      if (typeof values === 'string') return status(400, 'INVALID_ARGUMENT', values);
      embeddings.push({ values });
    }
    json(response, 200, { embeddings });
  };
}

/** The most instances Vertex AI's text-embedding models take in one :predict call. */
const VERTEX_MAX_INSTANCES = 250;

/**
 * Vertex AI's `.../publishers/google/models/{model}:predict` on a text-embedding model, behind
 * vertexGate (fake-google-cloud.ts), which checks the path and the token: `{instances:
 * [{content, task_type?, title?}], parameters?: {outputDimensionality?, autoTruncate?}}`,
 * answered `{predictions: [{embeddings: {values, statistics: {token_count, truncated}}}],
 * metadata: {billableCharacterCount}}`. At most 250 instances, each with a non-empty content.
 */
export function fakeVertexEmbeddings({ dimensions = 8 }: Omit<FakeEmbeddingOptions, 'key'> = {}): Responder {
  return (request, response) => {
    const invalid = (message: string) => json(response, 400, { error: { code: 400, message, status: 'INVALID_ARGUMENT' } });
    const { instances, parameters, ...rest } = request.body as { instances?: unknown; parameters?: Record<string, unknown> };
    const unknown = Object.keys(rest)[0];
    if (unknown !== undefined) return invalid(`Invalid JSON payload received. Unknown name "${unknown}": Cannot find field.`);
    if (!Array.isArray(instances) || instances.length === 0) return invalid('Invalid JSON payload: "instances" must not be empty.');
    if (instances.length > VERTEX_MAX_INSTANCES)
      return invalid(`Instances count ${instances.length} is greater than the maximum allowed ${VERTEX_MAX_INSTANCES}.`);
    const length = parameters?.outputDimensionality ?? dimensions;
    if (typeof length !== 'number' || !Number.isInteger(length) || length < 1) return invalid('outputDimensionality must be a positive integer.');
    let characters = 0;
    const predictions: object[] = [];
    for (const [index, instance] of (instances as Array<Record<string, unknown>>).entries()) {
      const content = instance?.content;
      if (typeof content !== 'string' || content === '') return invalid(`instances[${index}].content: the content must be a non-empty string.`);
      characters += content.replace(/\s/g, '').length;
      predictions.push({ embeddings: { values: fakeVectorOf(content, length), statistics: { token_count: fakeTokens(content), truncated: false } } });
    }
    json(response, 200, { predictions, metadata: { billableCharacterCount: characters } });
  };
}
