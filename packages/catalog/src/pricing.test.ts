import { describe, expect, it } from 'vitest';
import { costBoundPicoUsd, costPicoUsd, type Pricing } from './pricing.js';

/** claude-sonnet-4 at Anthropic's published rates, in micro-USD per million tokens. */
const SONNET: Pricing = {
  input_micro_usd_per_mtok: 3_000_000,
  cached_input_micro_usd_per_mtok: 300_000,
  output_micro_usd_per_mtok: 15_000_000,
  cache_write_micro_usd_per_mtok: 3_750_000,
  cache_write_1h_micro_usd_per_mtok: 6_000_000,
};

describe('costPicoUsd', () => {
  it('prices plain input, cache reads, five-minute and one-hour writes and output each at its rate', () => {
    // 10,000 plain x $3 + 50,000 5m writes x $3.75 + 8,000 1h writes x $6 + 120,000 reads x $0.30
    // + 2,000 output x $15, per million: $0.03 + $0.1875 + $0.048 + $0.036 + $0.03 = $0.3315.
    const usage = {
      prompt_tokens: 188_000,
      completion_tokens: 2_000,
      cached_tokens: 120_000,
      cache_write_tokens: 58_000,
      cache_write_5m_tokens: 50_000,
      cache_write_1h_tokens: 8_000,
    };
    expect(costPicoUsd(SONNET, usage)).toBe(331_500_000_000n);
  });

  it('prices cache writes reported without their lifetime as five-minute writes', () => {
    // 1,000 plain x $3 + 4,000 writes x $3.75 + 7 output x $15, per million.
    expect(costPicoUsd(SONNET, { prompt_tokens: 5_000, completion_tokens: 7, cache_write_tokens: 4_000 })).toBe(
      3_000_000_000n + 15_000_000_000n + 105_000_000n,
    );
  });

  it('prices cache writes at the input price when the pricing has no write prices', () => {
    const pricing: Pricing = { input_micro_usd_per_mtok: 2_500_000, cached_input_micro_usd_per_mtok: 1_250_000, output_micro_usd_per_mtok: 0 };
    expect(costPicoUsd(pricing, { prompt_tokens: 300, cached_tokens: 100, cache_write_tokens: 150, cache_write_1h_tokens: 150 })).toBe(
      200n * 2_500_000n + 100n * 1_250_000n,
    );
  });

  it('never bills more prompt tokens than prompt_tokens, reads first', () => {
    // 100 prompt tokens of which the provider claims 80 read and 50 written: 80 reads, 20 writes.
    expect(costPicoUsd(SONNET, { prompt_tokens: 100, cached_tokens: 80, cache_write_tokens: 50, cache_write_5m_tokens: 50 })).toBe(
      80n * 300_000n + 20n * 3_750_000n,
    );
  });
});

describe('costBoundPicoUsd', () => {
  const MINI: Pricing = { input_micro_usd_per_mtok: 150_000, cached_input_micro_usd_per_mtok: 75_000, output_micro_usd_per_mtok: 600_000 };

  it('is never below what any usage of those tokens costs: every prompt token at the dearest prompt price', () => {
    // 1,000 prompt tokens at the one-hour write price ($6) + 500 output at $15, per million.
    const bound = costBoundPicoUsd([SONNET], 1_000, 500);
    expect(bound).toBe(6_000_000_000n + 7_500_000_000n);
    for (const usage of [
      { prompt_tokens: 1_000, completion_tokens: 500 },
      { prompt_tokens: 1_000, completion_tokens: 500, cached_tokens: 1_000 },
      { prompt_tokens: 1_000, completion_tokens: 500, cache_write_tokens: 1_000, cache_write_1h_tokens: 1_000 },
    ])
      expect(costPicoUsd(SONNET, usage)).toBeLessThanOrEqual(bound);
  });

  it('takes the dearest of several models (a request that may fall back), and is 0 without prices', () => {
    expect(costBoundPicoUsd([MINI, SONNET], 10, 10)).toBe(costBoundPicoUsd([SONNET], 10, 10));
    expect(costBoundPicoUsd([MINI], 10, 10)).toBe(10n * 150_000n + 10n * 600_000n);
    expect(costBoundPicoUsd([], 1_000, 1_000)).toBe(0n);
  });
});
