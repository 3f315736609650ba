import { describe, expect, it } from 'vitest';
import type { UsageBucket, UsageResult } from './admin-api';
import { OTHER_SERIES, RANGES, spendSeries, totalsBy, usageWindow } from './usage-series';

const HOUR = 3600;
const DAY = 86_400;
/** 2025-03-10 14:25:00 UTC. */
const NOW = Date.UTC(2025, 2, 10, 14, 25) / 1000;

function result(group: Partial<UsageResult>, cost: number, requests = 1): UsageResult {
  return {
    object: 'usage.result',
    requests,
    prompt_tokens: 10 * requests,
    completion_tokens: 20 * requests,
    cached_tokens: 0,
    cache_write_tokens: 0,
    cost_usd: cost,
    cost_pico_usd: String(Math.round(cost * 1e12)),
    errors: 0,
    fallbacks: 0,
    cache_hits: 0,
    saved_cost_usd: 0,
    saved_cost_pico_usd: '0',
    ...group,
  };
}

function bucket(start: number, width: number, results: UsageResult[]): UsageBucket {
  return { object: 'bucket', start_time: start, end_time: start + width, results };
}

describe('usageWindow', () => {
  it('ends with the current bucket, whole, and lists every bucket start', () => {
    const day = usageWindow(RANGES.find((range) => range.id === '24h')!, NOW);
    const currentHour = Date.UTC(2025, 2, 10, 14) / 1000;
    expect(day.bucket).toBe('hour');
    expect(day.times).toHaveLength(24);
    expect(day.times.at(-1)).toBe(currentHour);
    expect(day.start).toBe(currentHour - 23 * HOUR);
    expect(day.end).toBe(currentHour + HOUR);

    const year = usageWindow(RANGES.find((range) => range.id === '400d')!, NOW);
    const midnight = Date.UTC(2025, 2, 10) / 1000;
    expect(year.bucket).toBe('day');
    expect(year.times).toHaveLength(400);
    expect(year.times.at(-1)).toBe(midnight);
    expect(year.times[0]).toBe(midnight - 399 * DAY);
    expect(year.end).toBe(midnight + DAY);
  });
});

describe('spendSeries', () => {
  const window = usageWindow(RANGES.find((range) => range.id === '24h')!, NOW);
  const [first, second] = [window.times[3]!, window.times[20]!];

  it('fills the buckets the API left out, and groups absent from a bucket, with zero', () => {
    const spend = spendSeries(
      [
        bucket(first, HOUR, [result({ model: 'sim-mini' }, 0.002), result({ model: 'sim-full' }, 0.5)]),
        bucket(second, HOUR, [result({ model: 'sim-mini' }, 0.001)]),
      ],
      'model',
      window.times,
    );
    expect(spend.times).toEqual(window.times);
    expect(spend.series.map((series) => series.id)).toEqual(['sim-full', 'sim-mini']);
    const [full, mini] = spend.series;
    expect(full!.values).toHaveLength(24);
    expect(full!.values.filter((value) => value !== 0)).toEqual([0.5]);
    expect(full!.values[3]).toBe(0.5);
    expect(full!.values[20]).toBe(0);
    expect(mini!.values[3]).toBe(0.002);
    expect(mini!.values[20]).toBe(0.001);
    expect(mini!.values.reduce((sum, value) => sum + value, 0)).toBeCloseTo(0.003, 12);
    expect(spend.total).toBeCloseTo(0.503, 12);
  });

  it('draws an empty range as no series at all', () => {
    expect(spendSeries([], 'key_id', window.times)).toEqual({ times: window.times, series: [], total: 0 });
  });

  it('puts a bucket cut off the grid into the bucket it starts in, and leaves out one outside the window', () => {
    const spend = spendSeries(
      [
        bucket(first + 1800, HOUR, [result({ key_id: 'key_a' }, 1)]),
        bucket(window.start - HOUR, HOUR, [result({ key_id: 'key_a' }, 100)]),
        bucket(window.end, HOUR, [result({ key_id: 'key_a' }, 100)]),
      ],
      'key_id',
      window.times,
    );
    expect(spend.series[0]!.values[3]).toBe(1);
    expect(spend.total).toBe(1);
  });

  it('keeps the largest spenders and sums the rest as one series', () => {
    const results = Array.from({ length: 5 }, (_, index) => result({ key_id: `key_${index}` }, index + 1));
    const spend = spendSeries([bucket(first, HOUR, results)], 'key_id', window.times, 3);
    expect(spend.series.map((series) => series.id)).toEqual(['key_4', 'key_3', OTHER_SERIES]);
    expect(spend.series[2]!.values[3]).toBe(1 + 2 + 3);
    expect(spend.total).toBe(15);
  });
});

describe('totalsBy', () => {
  it('sums each group over every bucket, cache hits and saved cost included, largest spend first', () => {
    const totals = totalsBy(
      [
        bucket(0, HOUR, [result({ key_id: 'key_a', cache_hits: 1, saved_cost_usd: 0.5 }, 0.25, 2), result({ key_id: 'key_b' }, 1, 1)]),
        bucket(HOUR, HOUR, [result({ key_id: 'key_a', cache_hits: 2, saved_cost_usd: 0.25 }, 1, 3)]),
      ],
      'key_id',
    );
    const zero = { cached_tokens: 0, cache_write_tokens: 0, errors: 0, fallbacks: 0 };
    expect(totals).toEqual([
      {
        id: 'key_a',
        totals: { ...zero, requests: 5, prompt_tokens: 50, completion_tokens: 100, cost_usd: 1.25, cache_hits: 3, saved_cost_usd: 0.75 },
      },
      {
        id: 'key_b',
        totals: { ...zero, requests: 1, prompt_tokens: 10, completion_tokens: 20, cost_usd: 1, cache_hits: 0, saved_cost_usd: 0 },
      },
    ]);
  });
});
