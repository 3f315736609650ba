import { costPicoUsd, loadCatalog, pricingOf } from '@gateway/catalog';
import { PoisonMessageError } from '@gateway/messaging';
import type { UsageEventOutput } from '@gateway/proto';
import { describe, expect, it } from 'vitest';
import { requestRow, traceIdOf } from './request-record.js';

const catalog = loadCatalog();
const base: UsageEventOutput = {
  event_id: 'e1',
  key_id: 'key_AAAAAAAAAAAAAAAA',
  model_id: 'sim-mini',
  provider: 'simulated',
  received_at_ms: Date.UTC(2026, 10, 27),
  usage: { prompt_tokens: 1_000, completion_tokens: 100, total_tokens: 1_100 },
  fallback_models: [],
  guardrails: [],
} as UsageEventOutput;

describe('a usage event as a row', () => {
  it('takes the trace id of a W3C traceparent, and nothing of anything else', () => {
    expect(traceIdOf('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(traceIdOf('')).toBe('');
    expect(traceIdOf(undefined)).toBe('');
    expect(traceIdOf('00-not-a-trace-01')).toBe('');
  });

  it('prices it as metering does, and an unknown model at the cost the edge reported', () => {
    expect(requestRow(base, catalog).cost_pico_usd).toBe(costPicoUsd(pricingOf(catalog.byId.get('sim-mini')!, 'simulated'), base.usage!).toString());
    expect(requestRow({ ...base, model_id: 'gone', reported_cost_pico_usd: 1234 }, catalog).cost_pico_usd).toBe('1234');
  });

  it('prices a response-cache hit at its hit cost, keeps what it saved, and what the cache did for any other request', () => {
    const hit = requestRow(
      { ...base, cache: { status: 'hit', age_ms: 5_000, saved_cost_pico_usd: 900_000, cost_pico_usd: 90_000, count_tokens: false } },
      catalog,
    );
    expect(hit).toMatchObject({ cache_status: 'hit', saved_cost_pico_usd: '900000', cost_pico_usd: '90000', prompt_tokens: 1_000, completion_tokens: 100 });
    expect(requestRow({ ...base, cache: { status: 'hit', saved_cost_pico_usd: 900_000 } }, catalog)).toMatchObject({ cost_pico_usd: '0' });
    const miss = requestRow({ ...base, cache: { status: 'miss', saved_cost_pico_usd: 0, cost_pico_usd: 0 } }, catalog);
    expect(miss).toMatchObject({ cache_status: 'miss', saved_cost_pico_usd: '0', cost_pico_usd: requestRow(base, catalog).cost_pico_usd });
    expect(requestRow({ ...base, cache: { status: 'skip' } }, catalog).cache_status).toBe('skip');
    expect(requestRow(base, catalog)).toMatchObject({ cache_status: null, saved_cost_pico_usd: '0' });
    expect(requestRow({ ...base, cache: { status: 'stale' } }, catalog).cache_status).toBeNull();
  });

  it("names the API of an edge from before UsageEvent.api by the event's operation", () => {
    expect(requestRow({ ...base, operation: 'embeddings' }, catalog).api).toBe('embeddings');
    expect(requestRow({ ...base, operation: 'chat' }, catalog).api).toBe('chat');
    expect(requestRow({ ...base, api: 'messages' }, catalog).api).toBe('messages');
  });

  it.each([
    ['missing_event_id', { event_id: '' }],
    ['missing_key_id', { key_id: '' }],
    ['missing_received_at', { received_at_ms: 0 }],
  ])('refuses as poison (%s) an event it can never hold', (reason, change) => {
    let thrown: unknown;
    try {
      requestRow({ ...base, ...change }, catalog);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PoisonMessageError);
    expect((thrown as PoisonMessageError).reason).toBe(reason);
  });
});
