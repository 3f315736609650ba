/**
 * From the usage API's pages to what the Usage page draws: the time window of each range, the
 * spend per group on a complete grid of buckets (the API lists only non-empty buckets, so the gaps
 * are filled with zero here), and the totals per group over the whole window.
 */
import type { BucketWidth, UsageBucket, UsageResult } from './admin-api';

/** The ranges the Usage page offers. */
export type RangeId = '24h' | '7d' | '30d' | '400d';

/** A range: how many buckets of which width, ending with the current one. */
export interface Range {
  id: RangeId;
  label: string;
  bucket: BucketWidth;
  buckets: number;
}

/** The ranges, in the order the selector lists them; the first is the default. */
export const RANGES: readonly Range[] = [
  { id: '24h', label: 'Last 24 hours (hourly)', bucket: 'hour', buckets: 24 },
  { id: '7d', label: 'Last 7 days (hourly)', bucket: 'hour', buckets: 7 * 24 },
  { id: '30d', label: 'Last 30 days (daily)', bucket: 'day', buckets: 30 },
  { id: '400d', label: 'Last 400 days (daily)', bucket: 'day', buckets: 400 },
];

/** Seconds in a bucket of each width. */
export const BUCKET_SECONDS: Readonly<Record<BucketWidth, number>> = { hour: 3600, day: 86_400 };

/** The query window of a range and the start of each of its buckets. */
export interface UsageWindow {
  /** Unix seconds: the start of the first bucket. */
  start: number;
  /**
   * Unix seconds: the end of the current bucket, so the window is whole buckets and a request
   * made this second is in it (the end is exclusive); the API has nothing after now to return.
   */
  end: number;
  bucket: BucketWidth;
  /** The start of every bucket in the window, ascending: the x values of the charts. */
  times: number[];
}

/**
 * The window of a range at `nowSeconds`. Buckets are cut at whole hours and at UTC midnights, as
 * the API cuts them, so every bucket the API returns lands on one of `times`.
 */
export function usageWindow(range: Range, nowSeconds: number): UsageWindow {
  const size = BUCKET_SECONDS[range.bucket];
  const current = Math.floor(nowSeconds / size) * size;
  const start = current - (range.buckets - 1) * size;
  const times = Array.from({ length: range.buckets }, (_, index) => start + index * size);
  return { start, end: current + size, bucket: range.bucket, times };
}

/** What a chart draws: one value per bucket for each group, and the groups' order. */
export interface SpendSeries {
  times: number[];
  /** Largest total spend first; at most `maxSeries`, the rest summed as "other". */
  series: Array<{ id: string; values: number[]; total: number }>;
  /** The spend of every group over the window. */
  total: number;
}

/** The group a result belongs to on a dimension; results the API did not group stay together. */
function groupOf(result: UsageResult, dimension: 'key_id' | 'model' | 'team_id'): string {
  if (dimension === 'team_id') return result.team_id ?? NO_TEAM;
  return result[dimension] ?? '(all)';
}

/** The group of the keys without a team, grouped by team. */
export const NO_TEAM = '(no team)';

/** The id of the series that sums the groups beyond the chart's limit. */
export const OTHER_SERIES = '(other)';

/**
 * Spend in USD per group (key or model) and bucket, zero where the API listed no bucket or the
 * bucket has no result for the group. A bucket off the grid (cut differently than expected) is
 * counted in the grid bucket it starts in; one outside the window is left out.
 */
export function spendSeries(buckets: readonly UsageBucket[], dimension: 'key_id' | 'model', times: readonly number[], maxSeries = 8): SpendSeries {
  const step = times.length > 1 ? times[1]! - times[0]! : 1;
  const first = times[0] ?? 0;
  const byGroup = new Map<string, number[]>();
  for (const bucket of buckets) {
    const index = Math.floor((bucket.start_time - first) / step);
    if (index < 0 || index >= times.length) continue;
    for (const result of bucket.results) {
      const group = groupOf(result, dimension);
      let values = byGroup.get(group);
      if (!values) byGroup.set(group, (values = new Array<number>(times.length).fill(0)));
      values[index] = values[index]! + result.cost_usd;
    }
  }
  const all = [...byGroup]
    .map(([id, values]) => ({ id, values, total: values.reduce((sum, value) => sum + value, 0) }))
    .sort((left, right) => right.total - left.total || left.id.localeCompare(right.id));
  const total = all.reduce((sum, series) => sum + series.total, 0);
  if (all.length <= maxSeries) return { times: [...times], series: all, total };
  const kept = all.slice(0, maxSeries - 1);
  const rest = all.slice(maxSeries - 1);
  const values = times.map((_, index) => rest.reduce((sum, series) => sum + series.values[index]!, 0));
  return { times: [...times], series: [...kept, { id: OTHER_SERIES, values, total: rest.reduce((sum, series) => sum + series.total, 0) }], total };
}

/** A result's counters, without its group. */
export type UsageTotals = Omit<UsageResult, 'object' | 'key_id' | 'model' | 'plan' | 'cost_pico_usd' | 'saved_cost_pico_usd'>;

const ZERO: UsageTotals = {
  requests: 0,
  prompt_tokens: 0,
  completion_tokens: 0,
  cached_tokens: 0,
  cache_write_tokens: 0,
  cost_usd: 0,
  errors: 0,
  fallbacks: 0,
  cache_hits: 0,
  saved_cost_usd: 0,
};

/** Adds a result's counters to totals. */
function add(totals: UsageTotals, result: UsageTotals): UsageTotals {
  return {
    requests: totals.requests + result.requests,
    prompt_tokens: totals.prompt_tokens + result.prompt_tokens,
    completion_tokens: totals.completion_tokens + result.completion_tokens,
    cached_tokens: totals.cached_tokens + result.cached_tokens,
    cache_write_tokens: totals.cache_write_tokens + result.cache_write_tokens,
    cost_usd: totals.cost_usd + result.cost_usd,
    errors: totals.errors + result.errors,
    fallbacks: totals.fallbacks + result.fallbacks,
    cache_hits: totals.cache_hits + result.cache_hits,
    saved_cost_usd: totals.saved_cost_usd + result.saved_cost_usd,
  };
}

/** The totals of each group (key or model) over every bucket, largest spend first. */
export function totalsBy(buckets: readonly UsageBucket[], dimension: 'key_id' | 'model' | 'team_id'): Array<{ id: string; totals: UsageTotals }> {
  const byGroup = new Map<string, UsageTotals>();
  for (const bucket of buckets) {
    for (const result of bucket.results) {
      const group = groupOf(result, dimension);
      byGroup.set(group, add(byGroup.get(group) ?? ZERO, result));
    }
  }
  return [...byGroup]
    .map(([id, totals]) => ({ id, totals }))
    .sort((left, right) => right.totals.cost_usd - left.totals.cost_usd || right.totals.requests - left.totals.requests || left.id.localeCompare(right.id));
}
