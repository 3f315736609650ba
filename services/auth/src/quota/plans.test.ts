import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadPlans, parsePlans, planFromProto, planToProto, PlansError } from './plans.js';

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/plans/${name}`, import.meta.url), 'utf8');
/** Plans from YAML lines, one plan a line. */
const inlinePlans = (lines: string[]) => parsePlans(lines.join('\n'), 'inline.yaml');

describe('plans', () => {
  it('ships the documented limits', () => {
    expect(loadPlans()).toEqual({
      starter: { requests_per_minute: 60, tokens_per_minute: 100_000, catalog_fallbacks: false, daily_budget: 'unlimited', monthly_budget: 'unlimited' },
      pro: { requests_per_minute: 1_000, tokens_per_minute: 2_000_000, catalog_fallbacks: false, daily_budget: 'unlimited', monthly_budget: 'unlimited' },
      enterprise: {
        requests_per_minute: 'unlimited',
        tokens_per_minute: 'unlimited',
        catalog_fallbacks: true,
        daily_budget: 'unlimited',
        monthly_budget: 'unlimited',
      },
    });
  });

  it('reads budgets in USD per plan as micro-USD, unlimited where left out', () => {
    const plans = inlinePlans([
      'starter: { requests_per_minute: 60, tokens_per_minute: 100000, daily_budget_usd: 2.5, monthly_budget_usd: 0.000001 }',
      'pro: { requests_per_minute: 1000, tokens_per_minute: 2000000, monthly_budget_usd: unlimited }',
      'enterprise: { requests_per_minute: unlimited, tokens_per_minute: unlimited, daily_budget_usd: 1000000 }',
    ]);
    expect([plans.starter.daily_budget, plans.starter.monthly_budget]).toEqual([2_500_000, 1]);
    expect([plans.pro.daily_budget, plans.pro.monthly_budget]).toEqual(['unlimited', 'unlimited']);
    expect([plans.enterprise.daily_budget, plans.enterprise.monthly_budget]).toEqual([1_000_000_000_000, 'unlimited']);
  });

  it('reads catalog_fallbacks per plan, false where it is left out', () => {
    const plans = inlinePlans([
      'starter: { requests_per_minute: 60, tokens_per_minute: 100000, catalog_fallbacks: true }',
      'pro: { requests_per_minute: 1000, tokens_per_minute: 2000000 }',
      'enterprise: { requests_per_minute: unlimited, tokens_per_minute: unlimited, catalog_fallbacks: false }',
    ]);
    expect([plans.starter.catalog_fallbacks, plans.pro.catalog_fallbacks, plans.enterprise.catalog_fallbacks]).toEqual([true, false, false]);
  });

  // Each invalid plans file and the exact error it must produce.
  const invalid: Array<[string, string]> = [
    ['unknown-plan.yaml', 'unknown-plan.yaml: unknown plan "gold" (expected starter, pro, enterprise)'],
    ['missing-plan.yaml', 'missing-plan.yaml: plan "enterprise" is missing'],
    ['negative-limit.yaml', 'negative-limit.yaml: starter.requests_per_minute must be a positive integer or "unlimited", got -1'],
    ['fractional-limit.yaml', 'fractional-limit.yaml: starter.tokens_per_minute must be a positive integer or "unlimited", got 1.5'],
    ['missing-field.yaml', 'missing-field.yaml: starter.tokens_per_minute is missing'],
    ['unknown-field.yaml', 'unknown-field.yaml: starter: unknown field "burst"'],
    ['not-a-mapping.yaml', 'not-a-mapping.yaml: expected a mapping of plan names to limits'],
    ['non-boolean-fallbacks.yaml', 'non-boolean-fallbacks.yaml: pro.catalog_fallbacks must be true or false, got "yes"'],
    ['numeric-fallbacks.yaml', 'numeric-fallbacks.yaml: starter.catalog_fallbacks must be true or false, got 1'],
    ['negative-budget.yaml', 'negative-budget.yaml: pro.daily_budget_usd must be a positive amount of USD (at least 0.000001) or "unlimited", got -5'],
    ['tiny-budget.yaml', 'tiny-budget.yaml: starter.monthly_budget_usd must be a positive amount of USD (at least 0.000001) or "unlimited", got 1e-7'],
    ['misspelled-unlimited.yaml', 'misspelled-unlimited.yaml: enterprise.requests_per_minute must be a positive integer or "unlimited", got "unlimted"'],
  ];
  it.each(invalid)('rejects %s', (name, message) => {
    expect(() => parsePlans(fixture(name), name)).toThrow(new PlansError(message));
  });

  it('rejects broken YAML naming the file', () => {
    expect(() => parsePlans(fixture('invalid-yaml.yaml'), 'invalid-yaml.yaml')).toThrow(/^invalid-yaml\.yaml: invalid YAML: /);
  });

  it('names a file it cannot read', () => {
    expect(() => loadPlans('/nonexistent/plans.yaml')).toThrow(/^\/nonexistent\/plans\.yaml: cannot read: /);
  });

  it('maps plan names to the proto enum and back', () => {
    expect(planToProto('pro')).toBe('PLAN_PRO');
    expect(planFromProto('PLAN_ENTERPRISE')).toBe('enterprise');
    expect(planFromProto(1)).toBe('starter');
    expect(planFromProto('PLAN_UNSPECIFIED')).toBeUndefined();
    expect(planFromProto(undefined)).toBeUndefined();
  });
});
