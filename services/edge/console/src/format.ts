/**
 * How the console writes numbers, money and times. Times are in UTC everywhere (tables and
 * charts), the time zone the usage buckets are cut in, so a row and a bucket always agree.
 */
import type { Budget, Limit } from './admin-api';

const COUNT = new Intl.NumberFormat('en-US');

/** A whole number with thousands separators. */
export function formatCount(value: number): string {
  return COUNT.format(value);
}

/**
 * An amount in USD. A single completion of a cheap model costs a few millionths of a dollar, so
 * amounts under a cent keep three significant digits instead of rounding to $0.00: "non-zero
 * spend" must be visible.
 */
export function formatUsd(value: number): string {
  if (!Number.isFinite(value)) return '—';
  if (value === 0) return '$0.00';
  const magnitude = Math.abs(value);
  const sign = value < 0 ? '-' : '';
  if (magnitude >= 0.01) return `${sign}$${magnitude.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: magnitude >= 1 ? 2 : 4 })}`;
  const decimals = Math.min(12, 2 - Math.floor(Math.log10(magnitude)));
  return `${sign}$${magnitude.toFixed(decimals)}`;
}

/** Unix seconds as "2025-01-31 14:05 UTC". */
export function formatUnixSeconds(seconds: number | null): string {
  if (seconds === null) return 'never';
  return `${new Date(seconds * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** Unix milliseconds as "2025-01-31 14:05:09 UTC". */
export function formatUnixMilliseconds(milliseconds: number): string {
  return `${new Date(milliseconds).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A duration in milliseconds, as ms below a second and as seconds above. */
export function formatMilliseconds(milliseconds: number): string {
  return milliseconds < 1000 ? `${Math.round(milliseconds)} ms` : `${(milliseconds / 1000).toFixed(1)} s`;
}

/** A per-minute limit in force; null (neither the key nor its plan sets one) is a dash. */
export function formatLimit(limit: Limit | null | undefined): string {
  if (limit === null || limit === undefined) return '—';
  return limit === 'unlimited' ? 'unlimited' : formatCount(limit);
}

/** A budget in force; null means the key has none. */
export function formatBudget(budget: Budget | null | undefined): string {
  if (budget === null || budget === undefined || budget === 'unlimited') return 'none';
  return formatUsd(budget);
}
