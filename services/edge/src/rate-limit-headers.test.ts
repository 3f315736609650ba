import { describe, expect, it } from 'vitest';
import { formatResetDuration, picoUsdString, rateLimitHeaders, retryAfterHeaders } from './rate-limit-headers.js';

describe('formatResetDuration', () => {
  it('writes durations the way OpenAI does', () => {
    expect(formatResetDuration(0)).toBe('0s');
    expect(formatResetDuration(250)).toBe('250ms');
    expect(formatResetDuration(999)).toBe('999ms');
    expect(formatResetDuration(1_000)).toBe('1s');
    expect(formatResetDuration(1_500)).toBe('1.5s');
    expect(formatResetDuration(17_280)).toBe('17.28s');
    expect(formatResetDuration(60_000)).toBe('1m0s');
    expect(formatResetDuration(360_000)).toBe('6m0s');
    expect(formatResetDuration(61_005)).toBe('1m1.005s');
    expect(formatResetDuration(3_600_000)).toBe('1h0m0s');
  });
});

describe('rateLimitHeaders', () => {
  it('gives limit, remaining and reset for each limited dimension', () => {
    expect(
      rateLimitHeaders({
        requests: { limit: 60, remaining: 12, reset_ms: 59_250, unlimited: false },
        tokens: { limit: 100_000, remaining: 0, reset_ms: 800, unlimited: false },
      }),
    ).toEqual({
      'x-ratelimit-limit-requests': '60',
      'x-ratelimit-remaining-requests': '12',
      'x-ratelimit-reset-requests': '59.25s',
      'x-ratelimit-limit-tokens': '100000',
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': '800ms',
    });
  });

  it('sends nothing for an unlimited dimension', () => {
    expect(
      rateLimitHeaders({
        requests: { limit: 0, remaining: 0, reset_ms: 0, unlimited: true },
        tokens: { limit: 5, remaining: 5, reset_ms: 0, unlimited: false },
      }),
    ).toEqual({ 'x-ratelimit-limit-tokens': '5', 'x-ratelimit-remaining-tokens': '5', 'x-ratelimit-reset-tokens': '0s' });
    expect(rateLimitHeaders({ requests: { unlimited: true }, tokens: { unlimited: true } })).toEqual({});
  });

  it("shows a team member the limit that binds first: the team's when it has less left", () => {
    const key = { limit: 1_000, remaining: 900, reset_ms: 6_000, unlimited: false };
    const team = { limit: 30, remaining: 2, reset_ms: 50_000, unlimited: false };
    const tokens = { limit: 100, remaining: 80, reset_ms: 0, unlimited: false };
    const teamTokens = { limit: 10_000, remaining: 9_000, reset_ms: 0, unlimited: false };
    expect(rateLimitHeaders({ requests: key, tokens, team_requests: team, team_tokens: teamTokens })).toEqual({
      'x-ratelimit-limit-requests': '30',
      'x-ratelimit-remaining-requests': '2',
      'x-ratelimit-reset-requests': '50s',
      'x-ratelimit-limit-tokens': '100',
      'x-ratelimit-remaining-tokens': '80',
      'x-ratelimit-reset-tokens': '0s',
    });
    // An unlimited key in a limited team: the team's; a team without limits: the key's.
    expect(rateLimitHeaders({ requests: { unlimited: true }, tokens: { unlimited: true }, team_requests: team })).toMatchObject({
      'x-ratelimit-limit-requests': '30',
    });
    expect(rateLimitHeaders({ requests: key, tokens: { unlimited: true }, team_requests: { unlimited: true } })).toMatchObject({
      'x-ratelimit-limit-requests': '1000',
    });
  });
});

describe('the budget header', () => {
  it('tells a key with a budget what it may still spend, in exact USD', () => {
    expect(rateLimitHeaders({ requests: { unlimited: true }, tokens: { unlimited: true }, budget: { limited: true, remaining_pico_usd: 1_234_567 } })).toEqual({
      'x-gateway-budget-remaining-usd': '0.000001234567',
    });
    expect(rateLimitHeaders({ budget: { limited: true } })).toEqual({ 'x-gateway-budget-remaining-usd': '0' });
    // A team's budget counts too: the smaller of what the key and its team may still spend.
    const team = { limited: true, remaining_pico_usd: 5_000_000 };
    expect(rateLimitHeaders({ budget: { limited: false }, team_budget: team })).toEqual({ 'x-gateway-budget-remaining-usd': '0.000005' });
    expect(rateLimitHeaders({ budget: { limited: true, remaining_pico_usd: 7_000_000 }, team_budget: team })).toEqual({
      'x-gateway-budget-remaining-usd': '0.000005',
    });
    expect(rateLimitHeaders({ budget: { limited: true, remaining_pico_usd: 1_000_000 }, team_budget: team })).toEqual({
      'x-gateway-budget-remaining-usd': '0.000001',
    });
    expect(rateLimitHeaders({ budget: { limited: false } })).toEqual({});
  });

  it('writes pico-USD as decimal USD without rounding', () => {
    expect([0, 1, 10, 1_000_000_000_000, 2_500_000_000_000, 123_456_789_012_345].map((pico) => picoUsdString(pico))).toEqual([
      '0',
      '0.000000000001',
      '0.00000000001',
      '1',
      '2.5',
      '123.456789012345',
    ]);
    expect(picoUsdString(9_223_372_036_854_775_807n)).toBe('9223372.036854775807');
  });
});

describe('retryAfterHeaders', () => {
  it('rounds seconds up, never below 1, and keeps the exact milliseconds', () => {
    expect(retryAfterHeaders(59_001)).toEqual({ 'retry-after': '60', 'retry-after-ms': '59001' });
    expect(retryAfterHeaders(60_000)).toEqual({ 'retry-after': '60', 'retry-after-ms': '60000' });
    expect(retryAfterHeaders(3)).toEqual({ 'retry-after': '1', 'retry-after-ms': '3' });
    expect(retryAfterHeaders(0)).toEqual({ 'retry-after': '1', 'retry-after-ms': '1' });
  });
});
