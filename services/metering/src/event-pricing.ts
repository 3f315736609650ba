/**
 * What one usage event costs and how the latest requests show it: priced with the catalog's
 * pricing and costPicoUsd (the function the edge uses for gateway.cost_usd, so both agree to the
 * pico-dollar), or, for a hit of the response cache, at the cost the edge gave it.
 */
import { costPicoUsd, pricingOf, type CatalogModel } from '@gateway/catalog';
import type { UsageEventOutput } from '@gateway/proto';

/** A metered request as the latest-requests list keeps it (RecentRequest's fields). */
export function recentJson(event: UsageEventOutput, usage: { prompt_tokens: number; completion_tokens: number }, cost: bigint): string {
  const auto = event.auto ? { score: event.auto.score ?? 0, tier: event.auto.tier ?? '', policy: event.auto.policy ?? '' } : undefined;
  const cache = event.cache?.status ? event.cache : undefined;
  return JSON.stringify({
    event_id: event.event_id,
    request_id: event.request_id ?? '',
    key_id: event.key_id,
    received_at_ms: event.received_at_ms ?? 0,
    requested_model: event.requested_model ?? '',
    model_id: event.model_id,
    provider: event.provider ?? '',
    stream: event.stream === true,
    outcome: event.outcome ?? 'OUTCOME_UNSPECIFIED',
    latency_ms: event.latency_ms ?? 0,
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    cost_pico_usd: cost.toString(),
    fallback_attempts: event.fallback_attempts ?? 0,
    ...(auto ? { auto } : {}),
    error_code: event.error_code ?? '',
    operation: event.operation || 'chat',
    ...(cache && {
      cache_status: cache.status,
      cache_age_ms: cache.status === 'hit' ? (cache.age_ms ?? 0) : 0,
      saved_cost_pico_usd: cache.status === 'hit' ? String(Math.max(0, Math.trunc(cache.saved_cost_pico_usd ?? 0))) : '0',
    }),
  });
}

/**
 * What the response cache did for an event, when it answered it (UsageEvent.cache.status `hit`):
 * the hit is metered at the cost the edge gave it (cost_pico_usd, the settings' share of the saved
 * cost), never at the catalog's price of its tokens, and records the cost it saved; its tokens
 * count in no total (no provider processed them) and settle its reservation only when the
 * settings count them (count_tokens). Undefined for a miss, a skip or no cache.
 */
function cacheHitOf(event: UsageEventOutput) {
  const cache = event.cache;
  if (cache?.status !== 'hit') return undefined;
  return {
    costPicoUsd: BigInt(Math.max(0, Math.trunc(cache.cost_pico_usd ?? 0))),
    savedCostPicoUsd: BigInt(Math.max(0, Math.trunc(cache.saved_cost_pico_usd ?? 0))),
    settledTokens: cache.count_tokens === true ? (event.usage?.total_tokens ?? 0) : 0,
  };
}

/** The tokens an event counts, what it costs, and, for a hit, what it saved and settles. */
export function pricedEvent(event: UsageEventOutput, model: CatalogModel | undefined) {
  const answered = {
    prompt_tokens: event.usage?.prompt_tokens ?? 0,
    completion_tokens: event.usage?.completion_tokens ?? 0,
    cached_tokens: event.usage?.cached_tokens ?? 0,
    cache_write_tokens: event.usage?.cache_write_tokens ?? 0,
  };
  const hit = cacheHitOf(event);
  // A hit's tokens are the stored answer's: listed with the request, counted nowhere.
  const tokenCounts = hit ? { prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cache_write_tokens: 0 } : answered;
  // The lifetime split prices the writes; the buckets count them together.
  // Priced by the provider that served the answer: a deployment of another provider bills its own prices.
  const cost = hit
    ? hit.costPicoUsd
    : !model
      ? 0n
      : costPicoUsd(pricingOf(model, event.provider ?? ''), {
          ...tokenCounts,
          cache_write_5m_tokens: event.usage?.cache_write_5m_tokens ?? 0,
          cache_write_1h_tokens: event.usage?.cache_write_1h_tokens ?? 0,
        });
  return { answered, tokenCounts, cost, hit };
}
