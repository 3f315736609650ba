/**
 * What the edge's tests fake of its peers, built one way: a catalog model as the router pushes it,
 * auth's allowing decision, and an executor's whole answer. Each test overrides what it checks.
 */
import type { CheckKeyRequest, CheckKeyResponseOutput, ExecuteResponseOutput, ModelOutput } from '@gateway/proto';
import type { AuthDecisions } from '../clients/auth-decisions.js';
import type { CatalogView } from '../catalog-view.js';

/** The test key's public id. */
export const TEST_KEY_ID = 'key_AAAAAAAAAAAAAAAA';

/** A catalog model of an openai-compatible provider, `overrides` applied. */
export function testModel(id: string, overrides: Partial<ModelOutput> = {}): ModelOutput {
  return {
    id,
    provider: 'openai-compatible',
    owned_by: 'tests',
    created: 0,
    pricing: { input_micro_usd_per_mtok: 1_000_000, cached_input_micro_usd_per_mtok: 500_000, output_micro_usd_per_mtok: 2_000_000 },
    context_window: 8_000,
    max_output_tokens: 1_000,
    capabilities: { tools: false, vision: false, streaming: true, json_mode: false },
    quality_tier: 'QUALITY_TIER_STANDARD',
    available: true,
    fallbacks: [],
    ...overrides,
  } as ModelOutput;
}

/** Auth's decision allowing a Pro key, `overrides` applied. */
export function allowDecision(keyId = TEST_KEY_ID, overrides: Partial<CheckKeyResponseOutput> = {}): CheckKeyResponseOutput {
  return {
    decision: 'DECISION_ALLOW',
    key_id: keyId,
    plan: 'PLAN_PRO',
    requests: { limit: 1000, remaining: 999, reset_ms: 60, unlimited: false },
    tokens: { limit: 0, remaining: 0, reset_ms: 0, unlimited: true },
    reservation_id: `${keyId}:r1`,
    ...overrides,
  } as CheckKeyResponseOutput;
}

/** An executor's whole answer of `model` saying `content`, with `completionTokens` of 10 prompt tokens. */
export function wholeAnswer(model: string, content: string, completionTokens: number): ExecuteResponseOutput {
  return {
    response: {
      id: 'chatcmpl-1',
      created: 1_700_000_000,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'FINISH_REASON_STOP' }],
      usage: { prompt_tokens: 10, completion_tokens: completionTokens, total_tokens: 10 + completionTokens, cached_tokens: 0 },
    },
    provider: 'openai-compatible',
    model_id: 'plain',
    attempts: [],
  } as unknown as ExecuteResponseOutput;
}

/** A catalog that is ready and holds `models`. */
export function catalogOf(models: readonly ModelOutput[]): CatalogView {
  return { ready: true, get: (id) => models.find((entry) => entry.id === id), list: () => [...models] };
}

/**
 * Auth's decisions as the completion path calls them: `check_key` records its request in `checks`
 * and answers what `decide` returns then (an Error is thrown); anything else, a settlement, is settled.
 */
export function fakeDecisions(checks: CheckKeyRequest[], decide: () => CheckKeyResponseOutput | Error): AuthDecisions {
  return {
    call: async (method: string, request: CheckKeyRequest) => {
      if (method !== 'check_key') return { outcome: 'SETTLE_OUTCOME_SETTLED' };
      checks.push(request);
      const decision = decide();
      if (decision instanceof Error) throw decision;
      return decision;
    },
  } as unknown as AuthDecisions;
}
