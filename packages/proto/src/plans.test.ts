import { describe, expect, it } from 'vitest';
import { Plan } from './generated/gateway/auth/v1/Plan.js';
import { isPlanName, PLAN_NAMES, planFromProto, planToProto } from './plans.js';

describe('the plans, declared once', () => {
  it('names exactly the contract plans, each both ways, by name and by number', () => {
    const contract = Object.keys(Plan).filter((value) => value !== 'PLAN_UNSPECIFIED');
    expect(PLAN_NAMES.map(planToProto)).toEqual(contract);
    PLAN_NAMES.forEach((name, index) => {
      expect(planFromProto(planToProto(name))).toBe(name);
      expect(planFromProto(index + 1)).toBe(name);
    });
  });

  it('knows no plan for PLAN_UNSPECIFIED, a newer peer plan or a name of the wrong case', () => {
    expect(planFromProto('PLAN_UNSPECIFIED')).toBeUndefined();
    expect(planFromProto(0)).toBeUndefined();
    expect(planFromProto('PLAN_PLATINUM')).toBeUndefined();
    expect(planFromProto(undefined)).toBeUndefined();
    expect(isPlanName('pro')).toBe(true);
    expect(isPlanName('Pro')).toBe(false);
  });
});
