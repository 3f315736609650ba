import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DAY_MS } from '../spend.js';
import { decodeCheckQuota, plansArgument } from './check-quota.js';
import { decodeRecordUsage } from './record-usage.js';
import { namedArguments } from './script.js';
import { decodeSettlement } from './settle-quota.js';

describe('script replies', () => {
  it('decode a decision about a live key into named fields', () => {
    // biome-ignore format: name/value pairs, a pair to a column
    const reply = [
      'status', 'deny_tokens', 'key_id', 'key_x', 'plan', 'pro', 'routing_policy', '',
      'request_limit', 60, 'requests_in_window', 3, 'request_reset_ms', 59_000,
      'token_limit', 1_000, 'tokens_in_window', 900, 'token_reset_ms', 58_000,
      'retry_after_ms', 1_500, 'catalog_fallbacks', 'off', 'budgeted', 1,
      'remaining_pico_usd', 7, 'spent_day_pico_usd', 8, 'spent_month_pico_usd', 9, 'month_exhausted', 0,
      'model_allow_lists', '[["sim-*","gpt-4o"],[]]',
      'log_bodies', 1,
    ];
    expect(decodeCheckQuota(reply)).toEqual({
      status: 'deny_tokens',
      keyId: 'key_x',
      plan: 'pro',
      routingPolicy: '',
      requests: { limit: 60, used: 3, resetMs: 59_000 },
      tokens: { limit: 1_000, used: 900, resetMs: 58_000 },
      retryAfterMs: 1_500,
      catalogFallbacks: 'off',
      budgeted: true,
      remainingPicoUsd: 7,
      spentDayPicoUsd: 8,
      spentMonthPicoUsd: 9,
      monthExhausted: false,
      modelAllowLists: [['sim-*', 'gpt-4o'], []],
      logBodies: true,
    });
    expect(decodeCheckQuota(['status', 'unknown_key'])).toEqual({ status: 'unknown_key' });
    expect(decodeCheckQuota(['status', 'revoked', 'key_id', 'key_x'])).toEqual({ status: 'revoked', keyId: 'key_x' });
  });

  it('refuse a status the decoder does not know (a script out of step with its module)', () => {
    expect(() => decodeCheckQuota(['status', 'maybe'])).toThrow('unexpected status "maybe"');
    expect(() => decodeRecordUsage(['outcome', 1])).toThrow('unexpected outcome "1"');
  });

  it('decode settlements and metering outcomes', () => {
    expect(decodeSettlement(['outcome', 'settled', 'delta_tokens', -40, 'tokens_in_window', 60])).toEqual({
      outcome: 'settled',
      deltaTokens: -40,
      tokensInWindow: 60,
    });
    expect(decodeRecordUsage(['outcome', 'duplicate'])).toBe('duplicate');
  });
});

describe('script arguments', () => {
  it('are passed by name', () => {
    expect(namedArguments({ mode: 'peek', now: '', window_ms: 2_000 })).toEqual(['mode', 'peek', 'now', '', 'window_ms', '2000']);
    expect(JSON.parse(plansArgument({ pro: { requests: 60, tokens: -1, dailyBudget: 5, monthlyBudget: -1 } }))).toEqual({ pro: [60, -1, 5, -1] });
  });

  it("agree with the Lua on a day's length", () => {
    expect(readFileSync(new URL('./lib/spend.lua', import.meta.url), 'utf8')).toContain(`local DAY_MS = ${DAY_MS}\n`);
  });
});
