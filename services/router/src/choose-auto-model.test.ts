import { describe, expect, it } from 'vitest';
import { loadCatalog, parseCatalog } from '@gateway/catalog';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import { CatalogState } from './catalog-state.js';
import { chooseAutoModel, type AutoRequest } from './choose-auto-model.js';
import { readPolicy } from './routing-policy.js';
import { readTraits, type Traits } from './trait-refusal.js';
import { thrownBy } from '@gateway/testing';

/** Scores standing for an easy and a hard prompt, against fixed thresholds (the model file's are retrained). */
const EASY = 0.01;
const MEDIUM = 0.2;
const HARD = 0.5;
const THRESHOLDS = { standard: 0.15, premium: 0.3 };

const catalog = loadCatalog();
const ALL_KEYS = {
  OPENAI_API_KEY: 'k',
  GROQ_API_KEY: 'k',
  TOGETHER_API_KEY: 'k',
  MISTRAL_API_KEY: 'k',
  DEEPSEEK_API_KEY: 'k',
  ANTHROPIC_API_KEY: 'k',
  GEMINI_API_KEY: 'k',
};

function choose(state: CatalogState, score: number, policy = 'balanced', traits: Partial<Traits> = {}): string {
  return chooseAutoModel(request(state, score, policy, traits)).model.id;
}

function request(state: CatalogState, score: number, policy: string, traits: Partial<Traits>): AutoRequest {
  return {
    models: state.enabledModels(),
    isAvailable: (id) => state.isAvailable(id),
    traits: { ...readTraits(undefined), ...traits },
    score,
    policy: readPolicy(policy),
    thresholds: THRESHOLDS,
  };
}

const refusal = (action: () => unknown): GatewayError => thrownBy(GatewayError, action);

describe('chooseAutoModel with every provider switched on', () => {
  const state = new CatalogState(catalog, ALL_KEYS);

  it('never answers with a simulated model while real ones are on', () => {
    for (const policy of ['balanced', 'cheapest', 'best', 'fastest'] as const) {
      for (const prompt of [EASY, HARD]) expect(choose(state, prompt, policy)).not.toMatch(/^sim-/);
    }
  });

  it('balanced: the cheapest economy model for "hi", the cheapest premium one for a hard prompt', () => {
    expect(choose(state, EASY)).toBe('groq/llama-3.1-8b-instant');
    expect(choose(state, HARD)).toBe('o3-mini');
  });

  it('balanced: respects vision within the tier', () => {
    expect(choose(state, EASY, 'balanced', { needsVision: true })).toBe('mistral/mistral-small-latest');
    expect(choose(state, HARD, 'balanced', { needsVision: true })).toBe('gpt-4.1');
  });

  it('best picks the priciest premium model, cheapest the cheapest of all', () => {
    expect(choose(state, EASY, 'best')).toBe('anthropic/claude-sonnet-4');
    expect(choose(state, HARD, 'cheapest')).toBe('groq/llama-3.1-8b-instant');
  });

  it('best honours JSON mode, which the Anthropic models lack', () => {
    expect(choose(state, EASY, 'best', { needsJsonMode: true })).toBe('google/gemini-2.5-pro');
  });
});

describe('chooseAutoModel with only the simulated models', () => {
  it('fastest picks the model with the smallest simulated time to first token', () => {
    expect(choose(new CatalogState(catalog, {}), HARD, 'fastest')).toBe('sim-mini');
  });

  it('moves to the nearest tier with a capable model, upwards on a tie', () => {
    const state = new CatalogState(catalog, {});
    expect(choose(state, EASY, 'balanced', { needsVision: true })).toBe('sim-standard');
    expect(choose(state, EASY, 'balanced', { promptTokens: 100_000 })).toBe('sim-pro');
  });

  it('skips unavailable models, and is UNAVAILABLE when no capable model is available', () => {
    const state = new CatalogState(catalog, {});
    state.setAvailability('sim-pro', false);
    expect(choose(state, HARD)).toBe('sim-standard');
    const error = refusal(() => choose(state, EASY, 'balanced', { promptTokens: 100_000 }));
    expect(error).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'model_unavailable', retryable: true, retryAfterMs: 5000 });
  });

  it('says which need no model can meet', () => {
    const state = new CatalogState(catalog, {});
    expect(refusal(() => choose(state, EASY, 'balanced', { promptTokens: 190_000, maxTokens: 16_000 }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'context_length_exceeded',
      param: 'messages',
      message:
        'The largest context window of any model is 200000 tokens. However, you requested 206000 tokens (190000 in the messages, 16000 in the completion). Please reduce the length of the messages or completion.',
    });
    expect(refusal(() => choose(state, EASY, 'balanced', { maxTokens: 20_000 }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'unsupported_parameter',
      param: 'max_tokens',
      message: 'max_tokens is too large: 20000. No model of this gateway supports more than 16384 completion tokens.',
    });
  });

  it('names the combination when each need alone is met but not together', () => {
    const small = parseCatalog(
      `
models:
  - { id: long, provider: simulated, owned_by: t, created: 0, upstream: { model: long }, pricing: { input: "1", output: "1" }, context_window: 1000000, max_output_tokens: 1000, capabilities: { tools: false, vision: false, streaming: true, json_mode: false }, quality_tier: economy }
  - { id: eyes, provider: simulated, owned_by: t, created: 0, upstream: { model: eyes }, pricing: { input: "1", output: "1" }, context_window: 8000, max_output_tokens: 1000, capabilities: { tools: false, vision: true, streaming: true, json_mode: false }, quality_tier: economy }
`,
      'small.yaml',
    );
    const state = new CatalogState(small, {});
    expect(refusal(() => choose(state, EASY, 'balanced', { needsVision: true, promptTokens: 100_000 }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'unsupported_parameter',
      param: undefined,
      message: 'No model of this gateway supports this combination: image inputs, 100000 tokens of context.',
    });
    expect(refusal(() => choose(state, EASY, 'balanced', { needsTools: true }))).toMatchObject({
      param: 'tools',
      message: 'No model of this gateway supports tools.',
    });
  });
});

describe('chooseAutoModel: the score and the policy', () => {
  const state = new CatalogState(catalog, {});

  it('balanced: the thresholds split economy, standard and premium', () => {
    expect([EASY, 0.149, MEDIUM, 0.299, HARD].map((score) => choose(state, score))).toEqual([
      'sim-mini',
      'sim-mini',
      'sim-standard',
      'sim-standard',
      'sim-pro',
    ]);
  });

  it('score>=X: premium at or above X, economy below, whatever the balanced thresholds', () => {
    expect(choose(state, MEDIUM, 'score>=0.2')).toBe('sim-pro');
    expect(choose(state, MEDIUM, 'score>=0.25')).toBe('sim-mini');
  });

  it('tier>=T: never below the floor, higher when the score asks', () => {
    expect(choose(state, EASY, 'tier>=standard')).toBe('sim-standard');
    expect(choose(state, HARD, 'tier>=standard')).toBe('sim-pro');
    state.setAvailability('sim-standard', false);
    state.setAvailability('sim-pro', false);
    try {
      expect(refusal(() => choose(state, EASY, 'tier>=standard'))).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'model_unavailable' });
    } finally {
      state.setAvailability('sim-standard', true);
      state.setAvailability('sim-pro', true);
    }
    const economyOnly = new CatalogState(
      parseCatalog(
        `
models:
  - { id: small, provider: simulated, owned_by: t, created: 0, upstream: { model: small }, pricing: { input: "1", output: "1" }, context_window: 8000, max_output_tokens: 1000, capabilities: { tools: true, vision: false, streaming: true, json_mode: true }, quality_tier: economy }
`,
        'economy.yaml',
      ),
      {},
    );
    expect(refusal(() => choose(economyOnly, HARD, 'tier>=premium'))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'invalid_value',
      param: 'policy',
    });
  });

  it('explains the choice: the wanted tier and a reason naming the model and what was skipped', () => {
    expect(chooseAutoModel(request(state, HARD, 'balanced', {}))).toMatchObject({
      tier: 'premium',
      reason: 'score 0.5 asks for premium (standard from 0.15, premium from 0.3); sim-pro (premium tier) among 3 capable available models.',
    });
    state.setAvailability('sim-pro', false);
    try {
      expect(chooseAutoModel(request(state, HARD, 'balanced', {}))).toMatchObject({
        tier: 'premium',
        reason:
          'score 0.5 asks for premium (standard from 0.15, premium from 0.3); sim-standard (nearest tier with a capable model: standard) among 2 capable available models, 1 unavailable skipped.',
      });
    } finally {
      state.setAvailability('sim-pro', true);
    }
    expect(chooseAutoModel(request(state, HARD, 'cheapest', {}))).toMatchObject({ tier: undefined, model: { id: 'sim-mini' } });
  });
});
