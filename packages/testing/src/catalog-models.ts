/**
 * Catalog models for tests, built directly (the catalog loader is another package's concern): the
 * simulated model and one model per provider adapter, pointing at a fake upstream's origin.
 */
import type { Catalog, CatalogModel } from '@gateway/catalog';

const BASE: Omit<CatalogModel, 'id' | 'provider' | 'upstream'> = {
  owned_by: 'gateway',
  created: 1_700_000_000,
  pricing: { input_micro_usd_per_mtok: 150_000, cached_input_micro_usd_per_mtok: 75_000, output_micro_usd_per_mtok: 600_000 },
  context_window: 128_000,
  max_output_tokens: 4_096,
  capabilities: { tools: true, vision: true, streaming: true, json_mode: true },
  quality_tier: 'standard',
  fallbacks: [],
};

/** A model with the shared test fields, its own, then the test's overrides. */
function testModel(own: Pick<CatalogModel, 'id' | 'provider' | 'upstream'> & Partial<CatalogModel>, overrides: Partial<CatalogModel>): CatalogModel {
  return { ...BASE, ...own, ...overrides };
}

/** A simulated model with no latency unless given. */
export function simulatedModel(overrides: Partial<CatalogModel> = {}): CatalogModel {
  return testModel(
    { id: 'sim-fast', provider: 'simulated', upstream: { model: 'sim-fast' }, simulation: { time_to_first_token_ms: 0, tokens_per_second: 0 } },
    overrides,
  );
}

/** The environment variable the openai-compatible test model reads its key from. */
export const TEST_KEY_ENV = 'FAKE_UPSTREAM_API_KEY';
/** The key tests put in TEST_KEY_ENV; long enough to be scrubbed from upstream messages. */
export const TEST_KEY = 'sk-test-0123456789abcdefsecret';

/** A catalog of the given models. */
export function catalogOf(models: CatalogModel[]): Catalog {
  return { models, byId: new Map(models.map((model) => [model.id, model])) };
}

/** The environment variable the anthropic and gemini test models read their keys from. */
export const PROVIDER_TEST_KEY_ENV = 'FAKE_PROVIDER_API_KEY';
/** The key tests put in PROVIDER_TEST_KEY_ENV; long enough to be scrubbed from upstream messages. */
export const PROVIDER_TEST_KEY = 'sk-ant-test-0123456789abcdefsecret';

/** What a test changes of a model: any field, and fields of its upstream, set over the model's own. */
export type UpstreamModelOverrides = Partial<Omit<CatalogModel, 'upstream'>> & { upstream?: Partial<CatalogModel['upstream']> };

/**
 * A model of a provider's own upstream (everything but its address), as a function of the fake
 * upstream's address and the test's overrides.
 */
function upstreamModel(own: Pick<CatalogModel, 'id' | 'provider' | 'upstream'> & Partial<CatalogModel>) {
  const { model, ...rest } = own.upstream;
  return (baseUrl: string, { upstream, ...overrides }: UpstreamModelOverrides = {}): CatalogModel =>
    testModel({ ...own, upstream: { model, base_url: baseUrl, ...rest, ...upstream } }, overrides);
}

/** An openai-compatible model pointing at a fake upstream. */
export const openAiCompatibleModel = upstreamModel({
  id: 'fake/gpt-4o-mini',
  provider: 'openai-compatible',
  upstream: { model: 'gpt-4o-mini', api_key_env: TEST_KEY_ENV, headers: { 'x-team': 'gateway' } },
});

/** An anthropic model pointing at a fake upstream's origin (`http://127.0.0.1:<port>`). */
export const anthropicModel = upstreamModel({
  id: 'fake/claude-sonnet-4',
  provider: 'anthropic',
  max_output_tokens: 64_000,
  upstream: {
    model: 'claude-sonnet-4-20250514',
    api_key_env: PROVIDER_TEST_KEY_ENV,
    headers: { 'anthropic-beta': 'fine-grained-tool-streaming-2025-05-14' },
  },
});

/** A gemini model pointing at a fake upstream's origin (`http://127.0.0.1:<port>`). */
export const geminiModel = upstreamModel({
  id: 'fake/gemini-2.0-flash',
  provider: 'gemini',
  max_output_tokens: 8_192,
  upstream: { model: 'gemini-2.0-flash', api_key_env: PROVIDER_TEST_KEY_ENV },
});

/** An Azure OpenAI model on a deployment URL of the fake upstream's origin, keyed by PROVIDER_TEST_KEY_ENV. */
export const azureModel = upstreamModel({
  id: 'azure/gpt-4o',
  provider: 'azure',
  upstream: { model: 'gpt-4o', api_key_env: PROVIDER_TEST_KEY_ENV, deployment: 'gpt-4o-prod', api_version: '2024-10-21' },
});

/** The region the bedrock test model is served from and signed for. */
export const BEDROCK_TEST_REGION = 'us-east-1';

/** A bedrock model (a cross-region inference profile of Claude) pointing at a fake Bedrock's origin; it signs with SigV4. */
export const bedrockModel = upstreamModel({
  id: 'bedrock/claude-sonnet-4',
  provider: 'bedrock',
  max_output_tokens: 64_000,
  upstream: { model: 'us.anthropic.claude-sonnet-4-20250514-v1:0', region: BEDROCK_TEST_REGION },
});

/** The environment variable the Vertex test models read their Google credentials from (a file path or `default`). */
export const VERTEX_TEST_CREDENTIALS_ENV = 'FAKE_VERTEX_CREDENTIALS';

/** A Gemini model on Vertex AI at a fake upstream's origin, in project acme-prod-ml, region us-central1. */
export const vertexModel = upstreamModel({
  id: 'fake/vertex-gemini-2.5-flash',
  provider: 'vertex',
  max_output_tokens: 8_192,
  upstream: { model: 'gemini-2.5-flash', api_key_env: VERTEX_TEST_CREDENTIALS_ENV, project: 'acme-prod-ml', region: 'us-central1' },
});

/** A Claude model on Vertex AI at a fake upstream's origin, in project acme-prod-ml, the global location. */
export const vertexAnthropicModel = upstreamModel({
  id: 'fake/vertex-claude-sonnet-4-5',
  provider: 'vertex-anthropic',
  max_output_tokens: 64_000,
  upstream: { model: 'claude-sonnet-4-5@20250929', api_key_env: VERTEX_TEST_CREDENTIALS_ENV, project: 'acme-prod-ml', region: 'global' },
});
