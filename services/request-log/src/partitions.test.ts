import { describe, expect, it } from 'vitest';
import { DAY_MS, dayOf, dayOfPartition, firstKeptDay, partitionName } from './partitions.js';

describe('daily partitions', () => {
  it('names a day after its UTC date and reads the name back', () => {
    const day = dayOf(Date.UTC(2026, 0, 31, 23, 59, 59, 999));
    expect(partitionName(day)).toBe('request_log_p20260131');
    expect(dayOfPartition('request_log_p20260131')).toBe(day);
    expect(dayOf(Date.UTC(2026, 1, 1))).toBe(day + 1);
  });

  it('ignores tables that are not daily partitions of the log', () => {
    expect(dayOfPartition('request_log')).toBeUndefined();
    expect(dayOfPartition('request_log_migrations')).toBeUndefined();
    expect(dayOfPartition('request_log_p2026013')).toBeUndefined();
  });

  it('keeps a day until it ended the retention ago', () => {
    const now = Date.UTC(2026, 2, 31, 12);
    // 30 days before now is March 1st, 12:00: March 1st is still kept, February 28th is past.
    expect(firstKeptDay(now, 30)).toBe(dayOf(Date.UTC(2026, 2, 1)));
    expect(firstKeptDay(Date.UTC(2026, 2, 31) - 1, 30)).toBe(dayOf(Date.UTC(2026, 1, 28)));
    expect(firstKeptDay(now, 1)).toBe(dayOf(now - DAY_MS));
  });
});
