import { describe, expect, it } from 'vitest';
import type { Key } from './admin-api';
import { FieldError, fieldsOfKey, keyChange, parseBudget, parseLimit } from './key-fields';

const KEY: Key = {
  object: 'api_key',
  id: 'key_ABCDEFGHIJKLMNOP',
  name: 'web',
  plan: 'pro',
  created_at: 0,
  last_used_at: null,
  revoked: false,
  limits: { requests_per_minute: 120, tokens_per_minute: 1_000_000 },
  budgets: { daily_usd: 5, monthly_usd: null },
  overrides: { requests_per_minute: 120, daily_budget_usd: 5 },
  routing_policy: null,
  catalog_fallbacks: false,
  allowed_models: null,
  allowed_mcp_tools: null,
  team_id: null,
  log_bodies: false,
};

describe('parseLimit and parseBudget', () => {
  it('read empty as the plan\'s, "unlimited", and numbers', () => {
    expect(parseLimit(' ', 'Limit')).toBeUndefined();
    expect(parseLimit('Unlimited', 'Limit')).toBe('unlimited');
    expect(parseLimit('600', 'Limit')).toBe(600);
    expect(parseBudget('$12.50', 'Budget')).toBe(12.5);
    expect(parseBudget('.5', 'Budget')).toBe(0.5);
    expect(parseBudget('unlimited', 'Budget')).toBe('unlimited');
  });

  it('refuse what the API would refuse, naming the field', () => {
    expect(() => parseLimit('1.5', 'Requests per minute')).toThrow(new FieldError('Requests per minute must be a whole number or "unlimited".'));
    expect(() => parseLimit('-1', 'Tokens per minute')).toThrow(FieldError);
    expect(() => parseBudget('-4', 'Monthly budget')).toThrow(new FieldError('Monthly budget must be an amount in USD or "unlimited".'));
    expect(() => parseBudget('1e3', 'Daily budget')).toThrow(FieldError);
  });
});

describe('keyChange', () => {
  it("sends only what changed, with null for a field emptied back to the plan's", () => {
    const before = fieldsOfKey(KEY);
    expect(before).toEqual({
      name: 'web',
      plan: 'pro',
      requestsPerMinute: '120',
      tokensPerMinute: '',
      dailyBudget: '5',
      monthlyBudget: '',
      allowedModels: '',
      logBodies: false,
    });
    expect(keyChange(before, before)).toBeUndefined();
    expect(keyChange(before, { ...before, requestsPerMinute: '120 ' })).toBeUndefined();
    expect(keyChange(before, { ...before, plan: 'enterprise', requestsPerMinute: '', monthlyBudget: 'unlimited' })).toEqual({
      plan: 'enterprise',
      limits: { requests_per_minute: null },
      budgets: { monthly_usd: 'unlimited' },
    });
    expect(keyChange(before, { ...before, name: 'web app', tokensPerMinute: '5000', dailyBudget: '' })).toEqual({
      name: 'web app',
      limits: { tokens_per_minute: 5000 },
      budgets: { daily_usd: null },
    });
  });

  it('sets an allow-list from ids and prefix* patterns, and null for every model again', () => {
    const before = fieldsOfKey(KEY);
    expect(keyChange(before, { ...before, allowedModels: 'sim-*, gpt-4o' })).toEqual({ allowed_models: ['sim-*', 'gpt-4o'] });
    const listed = fieldsOfKey({ ...KEY, allowed_models: ['sim-*', 'gpt-4o'] });
    expect(listed.allowedModels).toBe('sim-*, gpt-4o');
    expect(keyChange(listed, { ...listed, allowedModels: 'sim-*,gpt-4o' })).toBeUndefined();
    expect(keyChange(listed, { ...listed, allowedModels: ' ' })).toEqual({ allowed_models: null });
    // Keeping bodies is a change of its own, on or off.
    expect(keyChange(before, { ...before, logBodies: true })).toEqual({ log_bodies: true });
    expect(keyChange({ ...before, logBodies: true }, before)).toEqual({ log_bodies: false });
    expect(() => keyChange(before, { ...before, allowedModels: 'gpt*4o' })).toThrow(FieldError);
  });
});
