/**
 * The one capability rule set: whether a model can serve a request, and if not, the error its
 * caller gets, in one wording. The edge applies it to the catalog the router pushes (an explicit
 * model, each fallback); the router applies it when it resolves a model and when `auto` chooses
 * among capable ones. Plain data in, plain data out: each side wraps the problem in its own error
 * type (the edge's HTTP error, the router's gRPC status).
 */

/** What the rules read of a model: the catalog's fields, or the same fields of the proto Model. */
export interface CapabilityModel {
  id?: string;
  capabilities?: { tools?: boolean; vision?: boolean; streaming?: boolean; json_mode?: boolean } | null;
  /** 0 or absent: not known, not checked. */
  max_output_tokens?: number;
  /** 0 or absent: not known, not checked. */
  context_window?: number;
  /** The catalog's kind (`chat`, `embedding`) or the proto Model's (`MODEL_KIND_EMBEDDING`); absent: chat. */
  kind?: string | null;
  /** The catalog's embedding shape (an embedding model of the catalog). */
  embedding?: { dimensions: number; shortenable: boolean } | null;
  /** The proto Model's embedding fields (an embedding model the router pushed). */
  embedding_dimensions?: number | null;
  embedding_shortenable?: boolean | null;
}

/** Whether a model (the catalog's or the proto Model) is an embedding model. */
export function isEmbeddingModel(model: Pick<CapabilityModel, 'kind'>): boolean {
  return model.kind === 'embedding' || model.kind === 'MODEL_KIND_EMBEDDING';
}

/** What a request needs of a model. */
export interface RequestNeeds {
  /** The request is for embeddings (/v1/embeddings), not a completion: only embedding models serve it. */
  embeddings?: boolean;
  /** For embeddings: the vectors' length asked for (`dimensions`); 0 or absent: the model's own. */
  dimensions?: number;
  tools: boolean;
  vision: boolean;
  jsonMode: boolean;
  stream: boolean;
  promptTokens: number;
  /** The completion budget the caller set; 0 or undefined when none. */
  maxTokens?: number;
  /** The name the caller gave the budget (`max_completion_tokens` or `max_tokens`), for the error's param. */
  maxTokensParam?: string;
}

/** Why a model cannot serve a request: the caller's error, without its transport. */
export interface CapabilityProblem {
  /** The request field the caller would have to change. */
  param: string;
  /** `unsupported_parameter`, `invalid_value` or `context_length_exceeded`. */
  code: 'unsupported_parameter' | 'invalid_value' | 'context_length_exceeded';
  message: string;
}

/**
 * Why `model` cannot serve a request with these needs, or undefined when it can. Checks run from
 * the most specific to the most general, so the problem names the first field the caller would
 * have to change; messages follow OpenAI's wording where OpenAI has one (context length).
 */
export function capabilityProblem(model: CapabilityModel, needs: RequestNeeds): CapabilityProblem | undefined {
  const capabilities = model.capabilities ?? {};
  const id = model.id ?? '';
  // The kind first: no other field can make a chat model embed, or an embedding model chat.
  const embeddingModel = isEmbeddingModel(model);
  if (needs.embeddings === true) {
    if (embeddingModel) return dimensionsProblem(model, needs.dimensions ?? 0);
    return {
      param: 'model',
      code: 'invalid_value',
      message: `The model \`${id}\` is a chat model and does not produce embeddings; use an embedding model with /v1/embeddings.`,
    };
  }
  if (embeddingModel) {
    return {
      param: 'model',
      code: 'invalid_value',
      message: `The model \`${id}\` is an embedding model: it serves /v1/embeddings only; choose a chat model for this API.`,
    };
  }
  if (needs.tools && !capabilities.tools) {
    return {
      param: 'tools',
      code: 'unsupported_parameter',
      message: `The model \`${id}\` does not support tools; remove 'tools' or choose a model that supports them.`,
    };
  }
  if (needs.vision && !capabilities.vision) {
    return {
      param: 'messages',
      code: 'unsupported_parameter',
      message: `The model \`${id}\` does not accept image inputs; remove the image parts or choose a model with vision.`,
    };
  }
  if (needs.jsonMode && !capabilities.json_mode) {
    return {
      param: 'response_format',
      code: 'unsupported_parameter',
      message: `The model \`${id}\` does not support JSON mode ('response_format'); remove it or choose a model with JSON mode.`,
    };
  }
  if (needs.stream && !capabilities.streaming) {
    return { param: 'stream', code: 'unsupported_parameter', message: `The model \`${id}\` does not support streaming; set 'stream' to false.` };
  }
  const maxTokens = needs.maxTokens ?? 0;
  if (maxTokens > 0 && model.max_output_tokens && maxTokens > model.max_output_tokens) {
    const param = needs.maxTokensParam ?? 'max_tokens';
    return {
      param,
      code: 'invalid_value',
      message: `'${param}' is too large: ${maxTokens}. The model \`${id}\` supports at most ${model.max_output_tokens} completion tokens.`,
    };
  }
  const requested = needs.promptTokens + maxTokens;
  if (model.context_window && requested > model.context_window) {
    return {
      param: 'messages',
      code: 'context_length_exceeded',
      message: `This model's maximum context length is ${model.context_window} tokens. However, you requested ${requested} tokens (${needs.promptTokens} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`,
    };
  }
  return undefined;
}

/** Why an embedding model cannot give vectors of `dimensions` values, or undefined when it can (or its length is unknown). */
function dimensionsProblem(model: CapabilityModel, dimensions: number): CapabilityProblem | undefined {
  const length = model.embedding?.dimensions ?? model.embedding_dimensions ?? 0;
  if (dimensions <= 0 || length <= 0 || dimensions === length) return undefined;
  const shortenable = model.embedding?.shortenable ?? model.embedding_shortenable ?? false;
  const id = model.id ?? '';
  if (!shortenable)
    return {
      param: 'dimensions',
      code: 'unsupported_parameter',
      message: `The model \`${id}\` does not take 'dimensions': its vectors have ${length} values; remove it.`,
    };
  if (dimensions > length)
    return { param: 'dimensions', code: 'invalid_value', message: `'dimensions' is too large: ${dimensions}. The model \`${id}\` gives at most ${length}.` };
  return undefined;
}
