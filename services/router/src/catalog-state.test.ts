import { describe, expect, it } from 'vitest';
import { loadCatalog } from '@gateway/catalog';
import type { CatalogSnapshot } from '@gateway/proto';
import { CatalogState } from './catalog-state.js';

const catalog = loadCatalog();

describe('CatalogState', () => {
  it('snapshots only the switched-on models, as router.v1.Model with enum tiers', () => {
    const snapshot = new CatalogState(catalog, { OPENAI_API_KEY: '' }).snapshot();
    expect(snapshot.version).toBe(1);
    expect(snapshot.models?.map((model) => model.id)).toEqual(['sim-mini', 'sim-standard', 'sim-pro']);
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
});
