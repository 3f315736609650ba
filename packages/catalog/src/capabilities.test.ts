import { describe, expect, it } from 'vitest';
import { capabilityProblem, type RequestNeeds } from './capabilities.js';

const plain = {
  id: 'plain',
  capabilities: { tools: false, vision: false, streaming: false, json_mode: false },
  max_output_tokens: 2_000,
  context_window: 8_000,
};
const full = { ...plain, id: 'full', capabilities: { tools: true, vision: true, streaming: true, json_mode: true } };
const none: RequestNeeds = { tools: false, vision: false, jsonMode: false, stream: false, promptTokens: 10 };

describe('capabilityProblem', () => {
  it('lets a capable model serve, up to the exact output limit and window', () => {
    expect(capabilityProblem(full, { tools: true, vision: true, jsonMode: true, stream: true, promptTokens: 6_000, maxTokens: 2_000 })).toBeUndefined();
    expect(capabilityProblem(plain, none)).toBeUndefined();
  });

  it('names the first field the caller would have to change', () => {
    expect(capabilityProblem(plain, { ...none, tools: true, vision: true, stream: true })).toMatchObject({ param: 'tools', code: 'unsupported_parameter' });
    expect(capabilityProblem(plain, { ...none, vision: true, stream: true })).toMatchObject({ param: 'messages', code: 'unsupported_parameter' });
    expect(capabilityProblem(plain, { ...none, jsonMode: true, stream: true })).toMatchObject({ param: 'response_format' });
    expect(capabilityProblem(plain, { ...none, stream: true, maxTokens: 5_000 })).toMatchObject({ param: 'stream' });
  });

  it('names the budget as the caller did, and counts the prompt and the budget against the window', () => {
    expect(capabilityProblem(full, { ...none, maxTokens: 2_001, maxTokensParam: 'max_completion_tokens' })).toEqual({
      param: 'max_completion_tokens',
      code: 'invalid_value',
      message: "'max_completion_tokens' is too large: 2001. The model `full` supports at most 2000 completion tokens.",
    });
    expect(capabilityProblem(full, { ...none, promptTokens: 6_001, maxTokens: 2_000 })).toMatchObject({
      param: 'messages',
      code: 'context_length_exceeded',
      message: expect.stringContaining('you requested 8001 tokens (6001 in the messages, 2000 in the completion)'),
    });
  });

  it('checks no limit a model does not state', () => {
    expect(capabilityProblem({ id: 'open', capabilities: full.capabilities }, { ...none, promptTokens: 10_000_000, maxTokens: 1_000_000 })).toBeUndefined();
  });
});

describe('capabilityProblem across kinds', () => {
  const embedding = { id: 'embed', kind: 'embedding', embedding: { dimensions: 1536, shortenable: true }, context_window: 8_191 };
  const pushed = { id: 'pushed', kind: 'MODEL_KIND_EMBEDDING', embedding_dimensions: 768, embedding_shortenable: false };
  const embeddings: RequestNeeds = { ...none, embeddings: true };

  it('lets only embedding models embed, and only chat models chat', () => {
    expect(capabilityProblem(embedding, embeddings)).toBeUndefined();
    expect(capabilityProblem(pushed, embeddings)).toBeUndefined();
    expect(capabilityProblem(full, embeddings)).toEqual({
      param: 'model',
      code: 'invalid_value',
      message: 'The model `full` is a chat model and does not produce embeddings; use an embedding model with /v1/embeddings.',
    });
    expect(capabilityProblem(embedding, none)).toEqual({
      param: 'model',
      code: 'invalid_value',
      message: 'The model `embed` is an embedding model: it serves /v1/embeddings only; choose a chat model for this API.',
    });
    expect(capabilityProblem(pushed, none)).toMatchObject({ param: 'model' });
  });

  it("checks `dimensions` against the model's vectors, from the catalog or the pushed model", () => {
    expect(capabilityProblem(embedding, { ...embeddings, dimensions: 256 })).toBeUndefined();
    expect(capabilityProblem(embedding, { ...embeddings, dimensions: 1536 })).toBeUndefined();
    expect(capabilityProblem(embedding, { ...embeddings, dimensions: 1537 })).toEqual({
      param: 'dimensions',
      code: 'invalid_value',
      message: "'dimensions' is too large: 1537. The model `embed` gives at most 1536.",
    });
    expect(capabilityProblem(pushed, { ...embeddings, dimensions: 768 })).toBeUndefined();
    expect(capabilityProblem(pushed, { ...embeddings, dimensions: 256 })).toEqual({
      param: 'dimensions',
      code: 'unsupported_parameter',
      message: "The model `pushed` does not take 'dimensions': its vectors have 768 values; remove it.",
    });
  });
});
