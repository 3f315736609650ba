import { describe, expect, it } from 'vitest';
import { cacheKey, cacheScope, canonicalJson, isDeterministicEnough } from './cache-key.js';
import { mergeSettings } from './settings.js';

const request = {
  model: 'auto',
  messages: [{ role: 'ROLE_USER', text: 'What is the capital of France?' }],
  temperature: 0,
  tools: [{ type: 'function', function: { name: 'lookup', parameters_json: '{"type":"object"}' } }],
};
const base = { api: '/v1/chat/completions', modelId: 'gpt-4o-mini', modelRevision: 'r1', request };

describe('cacheKey', () => {
  it('is the same for the same question, whatever the key order, the caller, the stream or the metadata', () => {
    const same = {
      stream: true,
      user: 'someone-else',
      metadata: { run: '42' },
      stream_options: { include_usage: true },
      tools: request.tools,
      temperature: 0,
      messages: request.messages,
      model: 'gpt-4o-mini',
    };
    expect(cacheKey({ ...base, request: same })).toBe(cacheKey(base));
    expect(cacheKey(base)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('differs for another model, revision, API, message, tool, sampling or seed', () => {
    const key = cacheKey(base);
    const variants = [
      { ...base, modelId: 'gpt-4o' },
      { ...base, modelRevision: 'r2' },
      { ...base, api: '/v1/messages' },
      { ...base, request: { ...request, messages: [{ role: 'ROLE_USER', text: 'What is the capital of Spain?' }] } },
      { ...base, request: { ...request, tools: [] } },
      { ...base, request: { ...request, tool_choice: { mode: 'required' } } },
      { ...base, request: { ...request, temperature: 0.5 } },
      { ...base, request: { ...request, seed: 7 } },
      { ...base, request: { ...request, stop: ['\n'] } },
      { ...base, request: { ...request, response_format: { json_object: {} } } },
      { ...base, extra: { legacy_functions: true } },
    ];
    const keys = new Set(variants.map((variant) => cacheKey(variant)));
    expect(keys.size).toBe(variants.length);
    expect(keys.has(key)).toBe(false);
  });

  it('writes bytes as base64 and leaves out absent members', () => {
    expect(canonicalJson({ b: new Uint8Array([1, 2]), a: undefined, c: null, d: [1, 'x'] })).toBe('{"b":"AQI=","d":[1,"x"]}');
  });
});

describe('isDeterministicEnough', () => {
  it('takes a seed, or a temperature at most the threshold; no temperature is the providers default of 1', () => {
    expect(isDeterministicEnough({ temperature: 0 }, 0)).toBe(true);
    expect(isDeterministicEnough({ temperature: 0.7 }, 0)).toBe(false);
    expect(isDeterministicEnough({ temperature: 0.7, seed: 1 }, 0)).toBe(true);
    expect(isDeterministicEnough({}, 0)).toBe(false);
    expect(isDeterministicEnough({}, 1)).toBe(true);
  });
});

describe('cacheScope', () => {
  it("is the key's team, the key without one or when keys are their own scope, or a shared group", () => {
    expect(cacheScope('team', 'key_a', 'team_t')).toBe('team:team_t');
    expect(cacheScope('team', 'key_a', '')).toBe('key:key_a');
    expect(cacheScope('key', 'key_a', 'team_t')).toBe('key:key_a');
    expect(cacheScope('shared:lab', 'key_a', 'team_t')).toBe('shared:lab');
  });
});

describe('mergeSettings', () => {
  it('overrides field by field in order, over defaults that leave the cache off', () => {
    expect(mergeSettings([])).toMatchObject({ enabled: false, ttlSeconds: 3_600, maxTemperature: 0, scope: 'team', hitCostRatio: 0, countHitTokens: false });
    const merged = mergeSettings([
      { target: 'global', enabled: true, ttl_seconds: 60 },
      undefined,
      { target: 'team:t', ttl_seconds: 600, scope: 'key' },
      { target: 'key:k', enabled: false },
    ]);
    expect(merged).toMatchObject({ enabled: false, ttlSeconds: 600, scope: 'key' });
  });
});
