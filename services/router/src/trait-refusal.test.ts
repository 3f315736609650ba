import { describe, expect, it } from 'vitest';
import { parseCatalog } from '@gateway/catalog';
import { GrpcStatus } from '@gateway/grpc';
import { readTraits, traitRefusal } from './trait-refusal.js';

const model = parseCatalog(
  `
models:
  - { id: plain, provider: simulated, owned_by: t, created: 0, upstream: { model: plain }, pricing: { input: "1", output: "1" }, context_window: 8000, max_output_tokens: 2000, capabilities: { tools: false, vision: false, streaming: false, json_mode: false }, quality_tier: economy }
`,
  'plain.yaml',
).models[0];

describe('traitRefusal', () => {
  it('accepts a request the model can serve, up to the exact window', () => {
    expect(traitRefusal(model, readTraits({ prompt_tokens: 6000, max_tokens: 2000 }))).toBeUndefined();
    expect(traitRefusal(model, readTraits(undefined))).toBeUndefined();
  });

  it('names the parameter of each need the model lacks', () => {
    const cases = [
      [
        { needs_tools: true },
        'tools',
        'unsupported_parameter',
        "The model `plain` does not support tools; remove 'tools' or choose a model that supports them.",
      ],
      [
        { needs_vision: true },
        'messages',
        'unsupported_parameter',
        'The model `plain` does not accept image inputs; remove the image parts or choose a model with vision.',
      ],
      [
        { needs_json_mode: true },
        'response_format',
        'unsupported_parameter',
        "The model `plain` does not support JSON mode ('response_format'); remove it or choose a model with JSON mode.",
      ],
      [{ stream: true }, 'stream', 'unsupported_parameter', "The model `plain` does not support streaming; set 'stream' to false."],
      [{ max_tokens: 2001 }, 'max_tokens', 'invalid_value', "'max_tokens' is too large: 2001. The model `plain` supports at most 2000 completion tokens."],
    ] as const;
    for (const [traits, param, reason, message] of cases) {
      expect(traitRefusal(model, readTraits(traits))).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason, param, message });
    }
  });

  it('reports a prompt plus budget over the window as context_length_exceeded', () => {
    expect(traitRefusal(model, readTraits({ prompt_tokens: 7000, max_tokens: 1001 }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'context_length_exceeded',
      param: 'messages',
    });
  });
});
