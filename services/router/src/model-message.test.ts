import { describe, expect, it } from 'vitest';
import { parseCatalog } from '@gateway/catalog';
import { toModelMessage } from './model-message.js';

/** A catalog of one openai-compatible model, its upstream model and prices as given. */
function modelOf(upstreamModel: string, input: string) {
  const catalog = parseCatalog(
    `models:
  - id: team-model
    provider: openai-compatible
    owned_by: tests
    created: 1735689600
    upstream: { model: ${upstreamModel}, base_url: "http://127.0.0.1:9/v1", api_key_env: TEAM_MODEL_KEY }
    pricing: { input: "${input}", output: "0.60" }
    context_window: 128000
    max_output_tokens: 4096
    capabilities: { tools: true, vision: false, streaming: true, json_mode: true }
    quality_tier: economy
`,
    'test',
  );
  return toModelMessage(catalog.byId.get('team-model')!, true);
}

describe('Model.revision', () => {
  it('changes when what answers for the model changes, not when its prices or health do', () => {
    const base = modelOf('gpt-4o-mini', '0.15');
    expect(base.revision).toMatch(/^[0-9a-f]{16}$/);
    expect(modelOf('gpt-4o-mini', '0.30').revision).toBe(base.revision);
    expect(modelOf('gpt-4.1-mini', '0.15').revision).not.toBe(base.revision);
  });
});
