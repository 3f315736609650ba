/** What the keyspace's script tests share: a usage retention that keeps everything for the test, and ids of their own. */
import { randomBytes } from 'node:crypto';
import type { UsageRetention } from '../scripts/record-usage.js';

/** A usage record's retention for a test: an hour for every record, the five latest requests kept. */
export const TEST_RETENTION: UsageRetention = {
  pruneThrough: 0,
  dedupTtlMs: 3_600_000,
  buckets: { hourlyMs: 3_600_000, dailyMs: 3_600_000 },
  spendTtlMs: 3_600_000,
  recentKept: 5,
  recentTtlMs: 3_600_000,
};

/** Random base62 text of `length` characters, for the ids of a test's own keys and teams. */
export function base62(length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(length)].map((byte) => alphabet[byte % 62]).join('');
}
