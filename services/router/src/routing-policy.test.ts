import { describe, expect, it } from 'vitest';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import { policyLabel, readPolicy, wantedTier } from './routing-policy.js';
import { thrownBy } from '@gateway/testing';

const refusal = (action: () => unknown): GatewayError => thrownBy(GatewayError, action);

describe('readPolicy', () => {
  it('defaults to balanced and reads the named policies, case and spaces aside', () => {
    expect(readPolicy('')).toEqual({ kind: 'balanced', name: 'balanced' });
    expect(readPolicy(undefined)).toEqual({ kind: 'balanced', name: 'balanced' });
    expect(readPolicy(' Fastest ')).toEqual({ kind: 'fastest', name: 'fastest' });
    expect(readPolicy('cheapest').kind).toBe('cheapest');
    expect(readPolicy('best').kind).toBe('best');
  });

  it('reads a score threshold and a tier floor, normalising the name', () => {
    expect(readPolicy('score >= 0.30')).toEqual({ kind: 'score', threshold: 0.3, name: 'score>=0.3' });
    expect(readPolicy('score>=1')).toMatchObject({ threshold: 1 });
    expect(readPolicy('score>=.25')).toMatchObject({ threshold: 0.25 });
    expect(readPolicy('tier>=Standard')).toEqual({ kind: 'tier', floor: 'standard', name: 'tier>=standard' });
  });

  it('rejects anything outside the grammar as invalid_value on policy', () => {
    for (const policy of ['smartest', 'score>=1.5', 'score>0.3', 'score>=', 'tier>=gold', 'quality>=0.7']) {
      expect(
        refusal(() => readPolicy(policy)),
        policy,
      ).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason: 'invalid_value', param: 'policy' });
    }
    expect(refusal(() => readPolicy('smartest')).message).toBe(
      'Unknown routing policy `smartest`; expected one of balanced, cheapest, fastest, best, score>=<0..1> or tier>=<economy|standard|premium>.',
    );
  });
});

describe('wantedTier and policyLabel', () => {
  const thresholds = { standard: 0.15, premium: 0.3 };

  it('turns the score into a tier per policy', () => {
    expect([0, 0.15, 0.3].map((score) => wantedTier(readPolicy('balanced'), score, thresholds))).toEqual(['economy', 'standard', 'premium']);
    expect([0.1, 0.2].map((score) => wantedTier(readPolicy('score>=0.2'), score, thresholds))).toEqual(['economy', 'premium']);
    expect([0, 0.5].map((score) => wantedTier(readPolicy('tier>=standard'), score, thresholds))).toEqual(['standard', 'premium']);
    expect(wantedTier(readPolicy('best'), 0, thresholds)).toBe('premium');
    expect(wantedTier(readPolicy('cheapest'), 1, thresholds)).toBeUndefined();
  });

  it('keeps metric labels bounded: no caller number in a label', () => {
    expect(policyLabel(readPolicy('score>=0.123'))).toBe('score_threshold');
    expect(policyLabel(readPolicy('tier>=premium'))).toBe('tier_floor_premium');
    expect(policyLabel(readPolicy(''))).toBe('balanced');
  });
});
