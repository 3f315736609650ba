import { describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG_PATH, loadCatalog, parseCatalog } from '@gateway/catalog';
import { readFileSync } from 'node:fs';
import type { CatalogSnapshot } from '@gateway/proto';
import { CatalogState } from './catalog-state.js';

const catalog = loadCatalog();

describe('CatalogState', () => {
  it('snapshots only the switched-on models, as router.v1.Model with enum tiers', () => {
    const snapshot = new CatalogState(catalog, { OPENAI_API_KEY: '' }).snapshot();
    expect(snapshot.version).toBe(1);
    expect(snapshot.models?.map((model) => model.id)).toEqual(['sim-mini', 'sim-standard', 'sim-pro', 'sim-embedding']);
    expect(snapshot.models?.[2]).toEqual({
      id: 'sim-pro',
      provider: 'simulated',
      owned_by: 'gateway',
      created: 1735689600,
      pricing: {
        input_micro_usd_per_mtok: 3_000_000,
        cached_input_micro_usd_per_mtok: 1_500_000,
        output_micro_usd_per_mtok: 12_000_000,
        cache_write_micro_usd_per_mtok: 3_000_000,
        cache_write_1h_micro_usd_per_mtok: 3_000_000,
      },
      context_window: 200000,
      max_output_tokens: 16384,
      capabilities: { tools: true, vision: true, streaming: true, json_mode: true },
      quality_tier: 'QUALITY_TIER_PREMIUM',
      available: true,
      fallbacks: ['sim-standard', 'sim-mini'],
      kind: 'MODEL_KIND_CHAT',
      revision: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    expect(snapshot.models?.[3]).toMatchObject({
      id: 'sim-embedding',
      kind: 'MODEL_KIND_EMBEDDING',
      embedding_dimensions: 1536,
      embedding_shortenable: true,
      max_output_tokens: 0,
      capabilities: { tools: false, vision: false, streaming: false, json_mode: false },
      fallbacks: [],
    });
  });

  it("gives the edge the prices of a model's deployments of other providers, by provider", () => {
    const text = [
      'models:',
      '  - { id: gpt-4o, provider: openai-compatible, owned_by: openai, created: 1, context_window: 1000, max_output_tokens: 100, quality_tier: premium,',
      '      capabilities: { tools: true, vision: true, streaming: true, json_mode: true }, pricing: { input: "2.50", output: "10.00" },',
      '      upstream: { model: gpt-4o, base_url: "https://api.openai.com/v1", api_key_env: OPENAI_API_KEY },',
      '      deployments: [{ provider: azure, base_url: "https://contoso.openai.azure.com", api_key_env: AZURE_OPENAI_API_KEY, pricing: { input: "2.75", output: "11.00" } }] }',
    ].join('\n');
    const [model] = new CatalogState(parseCatalog(text, 'clouds.yaml'), { OPENAI_API_KEY: 'sk-test' }).snapshot().models ?? [];
    expect(model?.pricing).toMatchObject({ input_micro_usd_per_mtok: 2_500_000, output_micro_usd_per_mtok: 10_000_000 });
    expect(model?.provider_pricing).toEqual({
      azure: {
        input_micro_usd_per_mtok: 2_750_000,
        cached_input_micro_usd_per_mtok: 2_750_000,
        output_micro_usd_per_mtok: 11_000_000,
        cache_write_micro_usd_per_mtok: 2_750_000,
        cache_write_1h_micro_usd_per_mtok: 2_750_000,
      },
    });
  });

  it('switches a provider on with its key variable', () => {
    const state = new CatalogState(catalog, { GROQ_API_KEY: 'gsk-test' });
    expect(state.enabledModel('groq/llama-3.3-70b-versatile')?.id).toBe('groq/llama-3.3-70b-versatile');
    expect(state.enabledModel('gpt-4o')).toBeUndefined();
  });

  it('pushes a new version to subscribers on each real availability change, and stops after unsubscribe', () => {
    const state = new CatalogState(catalog, {});
    const received: CatalogSnapshot[] = [];
    const unsubscribe = state.subscribe((snapshot) => received.push(snapshot));
    expect(state.setAvailability('sim-pro', false)).toBe(true);
    expect(state.setAvailability('sim-pro', false)).toBe(false);
    expect(state.setAvailability('gpt-4o', false)).toBe(false);
    expect(state.isAvailable('sim-pro')).toBe(false);
    expect(received).toHaveLength(1);
    expect(received[0].version).toBe(2);
    expect(received[0].models?.find((model) => model.id === 'sim-pro')?.available).toBe(false);
    unsubscribe();
    expect(state.subscriberCount).toBe(0);
    expect(state.setAvailability('sim-pro', true)).toBe(true);
    expect(received).toHaveLength(1);
    expect(state.snapshot().version).toBe(3);
  });

  it('serves a replaced catalog at once: a new model switched on and pushed, a removed one gone, availability kept', () => {
    const state = new CatalogState(catalog, {});
    state.setAvailability('sim-pro', false);
    state.setAvailability('sim-mini', false);
    const received: CatalogSnapshot[] = [];
    state.subscribe((snapshot) => received.push(snapshot));
    const text = readFileSync(DEFAULT_CATALOG_PATH, 'utf8')
      // sim-mini leaves, sim-standard's input price changes, sim-fresh comes.
      .replace(/ {2}- id: sim-mini\n( {4}.*\n)+\n/, '')
      .replace('    fallbacks: [sim-mini]\n', '')
      .replace('[sim-standard, sim-mini]', '[sim-standard]')
      .replace('pricing: { input: "0.50", cached_input: "0.25", output: "1.50" }', 'pricing: { input: "0.70", cached_input: "0.25", output: "1.50" }')
      .replace(
        'models:\n',
        'models:\n  - { id: sim-fresh, provider: simulated, owned_by: gateway, created: 1764115200, upstream: { model: sim-fresh }, pricing: { input: "1", output: "2" }, context_window: 8192, max_output_tokens: 1024, capabilities: { tools: false, vision: false, streaming: true, json_mode: false }, quality_tier: economy }\n',
      );
    const before = state.enabledModel('sim-standard');
    state.replaceCatalog(parseCatalog(text, 'replaced.yaml'));
    expect(received).toHaveLength(1);
    expect(received[0].version).toBe(4);
    expect(received[0].models?.map((model) => [model.id, model.available])).toEqual([
      ['sim-fresh', true],
      ['sim-standard', true],
      ['sim-pro', false],
      ['sim-embedding', true],
    ]);
    expect(received[0].models?.[1].pricing?.input_micro_usd_per_mtok).toBe(700_000);
    expect(state.enabledModel('sim-mini')).toBeUndefined();
    expect(state.isAvailable('sim-fresh')).toBe(true);
    // A request that took the model before the swap keeps what it took.
    expect(before?.pricing.input_micro_usd_per_mtok).toBe(500_000);
    expect(state.catalog.byId.has('sim-fresh')).toBe(true);
  });
});
