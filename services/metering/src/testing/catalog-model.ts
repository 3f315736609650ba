/**
 * A catalog model for metering's tests, built by hand: metering reads only a model's id and
 * pricing, so the rest is fixed.
 */
import type { CatalogModel } from '@gateway/catalog';

/** A simulated model with the given id and prices. */
export function testModel(id: string, pricing: CatalogModel['pricing']): CatalogModel {
  return {
    id,
    provider: 'simulated',
    owned_by: 'test',
    created: 0,
    upstream: { model: id },
    pricing,
    context_window: 128_000,
    max_output_tokens: 4_096,
    capabilities: { tools: false, vision: false, streaming: true, json_mode: false },
    quality_tier: 'standard',
    fallbacks: [],
    simulation: { time_to_first_token_ms: 0, tokens_per_second: 0 },
  };
}
