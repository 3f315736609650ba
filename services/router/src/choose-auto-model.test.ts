import { describe, expect, it } from 'vitest';
import { loadCatalog, parseCatalog } from '@gateway/catalog';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import { CatalogState } from './catalog-state.js';
import { chooseAutoModel, readPolicy, type AutoRequest, type RoutingPolicy } from './choose-auto-model.js';
import { readTraits, type Traits } from './trait-refusal.js';
import { HARD_PROMPT } from '../test/prompts.js';

const catalog = loadCatalog();
const ALL_KEYS = { OPENAI_API_KEY: 'k', GROQ_API_KEY: 'k', TOGETHER_API_KEY: 'k', MISTRAL_API_KEY: 'k', DEEPSEEK_API_KEY: 'k', ANTHROPIC_API_KEY: 'k', GEMINI_API_KEY: 'k' };

function choose(state: CatalogState, promptText: string, policy: RoutingPolicy = 'balanced', traits: Partial<Traits> = {}): string {
  return chooseAutoModel(request(state, promptText, policy, traits)).model.id;
}

function request(state: CatalogState, promptText: string, policy: RoutingPolicy, traits: Partial<Traits>): AutoRequest {
  return { models: state.enabledModels(), isAvailable: (id) => state.isAvailable(id), traits: { ...readTraits(undefined), ...traits }, promptText, policy };
}

function refusal(action: () => unknown): GatewayError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

describe('chooseAutoModel with every provider switched on', () => {
  const state = new CatalogState(catalog, ALL_KEYS);

  it('never answers with a simulated model while real ones are on', () => {
    for (const policy of ['balanced', 'cheapest', 'best', 'fastest'] as const) {
      for (const prompt of ['hi', HARD_PROMPT]) expect(choose(state, prompt, policy)).not.toMatch(/^sim-/);
    }
  });

  it('balanced: the cheapest economy model for "hi", the cheapest premium one for a hard prompt', () => {
    expect(choose(state, 'hi')).toBe('groq/llama-3.1-8b-instant');
    expect(choose(state, HARD_PROMPT)).toBe('o3-mini');
  });

  it('balanced: respects vision within the tier', () => {
    expect(choose(state, 'hi', 'balanced', { needsVision: true })).toBe('mistral/mistral-small-latest');
    expect(choose(state, HARD_PROMPT, 'balanced', { needsVision: true })).toBe('gpt-4.1');
  });

  it('best picks the priciest premium model, cheapest the cheapest of all', () => {
    expect(choose(state, 'hi', 'best')).toBe('anthropic/claude-sonnet-4');
    expect(choose(state, HARD_PROMPT, 'cheapest')).toBe('groq/llama-3.1-8b-instant');
  });

  it('best honours JSON mode, which the Anthropic models lack', () => {
    expect(choose(state, 'hi', 'best', { needsJsonMode: true })).toBe('google/gemini-2.5-pro');
  });
});

describe('chooseAutoModel with only the simulated models', () => {
  it('fastest picks the model with the smallest simulated time to first token', () => {
    expect(choose(new CatalogState(catalog, {}), HARD_PROMPT, 'fastest')).toBe('sim-mini');
  });

  it('moves to the nearest tier with a capable model, upwards on a tie', () => {
    const state = new CatalogState(catalog, {});
    expect(choose(state, 'hi', 'balanced', { needsVision: true })).toBe('sim-standard');
    expect(choose(state, 'hi', 'balanced', { promptTokens: 100_000 })).toBe('sim-pro');
  });

  it('skips unavailable models, and is UNAVAILABLE when no capable model is available', () => {
    const state = new CatalogState(catalog, {});
    state.setAvailability('sim-pro', false);
    expect(choose(state, HARD_PROMPT)).toBe('sim-standard');
    const error = refusal(() => choose(state, 'hi', 'balanced', { promptTokens: 100_000 }));
    expect(error).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'model_unavailable', retryable: true, retryAfterMs: 5000 });
  });

  it('says which need no model can meet', () => {
    const state = new CatalogState(catalog, {});
    expect(refusal(() => choose(state, 'hi', 'balanced', { promptTokens: 190_000, maxTokens: 16_000 }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'context_length_exceeded',
      param: 'messages',
      message: 'The largest context window of any model is 200000 tokens. However, you requested 206000 tokens (190000 in the messages, 16000 in the completion). Please reduce the length of the messages or completion.',
    });
    expect(refusal(() => choose(state, 'hi', 'balanced', { maxTokens: 20_000 }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'unsupported_parameter',
      param: 'max_tokens',
      message: 'max_tokens is too large: 20000. No model of this gateway supports more than 16384 completion tokens.',
    });
  });

  it('names the combination when each need alone is met but not together', () => {
    const small = parseCatalog(`
models:
  - { id: long, provider: simulated, owned_by: t, created: 0, upstream: { model: long }, pricing: { input: "1", output: "1" }, context_window: 1000000, max_output_tokens: 1000, capabilities: { tools: false, vision: false, streaming: true, json_mode: false }, quality_tier: economy }
  - { id: eyes, provider: simulated, owned_by: t, created: 0, upstream: { model: eyes }, pricing: { input: "1", output: "1" }, context_window: 8000, max_output_tokens: 1000, capabilities: { tools: false, vision: true, streaming: true, json_mode: false }, quality_tier: economy }
`, 'small.yaml');
    const state = new CatalogState(small, {});
    expect(refusal(() => choose(state, 'hi', 'balanced', { needsVision: true, promptTokens: 100_000 }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'unsupported_parameter',
      param: undefined,
      message: 'No model of this gateway supports this combination: image inputs, 100000 tokens of context.',
    });
    expect(refusal(() => choose(state, 'hi', 'balanced', { needsTools: true }))).toMatchObject({ param: 'tools', message: 'No model of this gateway supports tools.' });
  });
});

describe('readPolicy', () => {
  it('defaults to balanced and rejects unknown names', () => {
    expect(readPolicy('')).toBe('balanced');
    expect(readPolicy(undefined)).toBe('balanced');
    expect(readPolicy('fastest')).toBe('fastest');
    expect(refusal(() => readPolicy('smartest'))).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason: 'invalid_value', param: 'policy', message: 'Unknown routing policy `smartest`; expected one of balanced, cheapest, best, fastest.' });
  });
});

