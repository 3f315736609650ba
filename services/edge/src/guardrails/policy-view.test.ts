import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import type { GuardServiceClient, PolicySummaryOutput } from '@gateway/proto';
import { WatchedPolicies } from './policy-view.js';

const logger = createLogger('edge', 'silent');

function summary(name: string, attachment: Partial<NonNullable<PolicySummaryOutput['attachment']>>, points: string[]): PolicySummaryOutput {
  return {
    name,
    attachment: { key_ids: [], team_ids: [], models: [], all_requests: false, ...attachment },
    points: points as PolicySummaryOutput['points'],
    stream_window: { tokens: 50, ms: 300 },
    on_error: 'ON_ERROR_BLOCK',
    mode: 'MODE_MONITOR',
    restore_masked: true,
    deadline_ms: 120,
  };
}

function view(...policies: PolicySummaryOutput[]): WatchedPolicies {
  const watched = new WatchedPolicies({} as GuardServiceClient, logger);
  watched.apply({ version: 1, policies });
  return watched;
}

const subject = { keyId: 'key_a', teamId: 'team_a', model: 'gpt-4o' };

describe('the policy view', () => {
  it('finds the policies attached to the key, the team, the model or every request, at their points only, in snapshot order', () => {
    const policies = view(
      summary('by-model', { models: ['gpt-4o'] }, ['POINT_INPUT']),
      summary('by-key', { key_ids: ['key_a'] }, ['POINT_INPUT', 'POINT_OUTPUT']),
      summary('everyone', { all_requests: true }, ['POINT_OUTPUT']),
      summary('by-team', { team_ids: ['team_a'], key_ids: ['key_a'] }, ['POINT_INPUT']),
      summary('other-key', { key_ids: ['key_b'] }, ['POINT_INPUT']),
    );
    expect(policies.applying('POINT_INPUT', subject).map((policy) => policy.name)).toEqual(['by-model', 'by-key', 'by-team']);
    expect(policies.applying('POINT_OUTPUT', subject).map((policy) => policy.name)).toEqual(['by-key', 'everyone']);
    expect(policies.applying('POINT_TOOL_ARGUMENTS', subject)).toEqual([]);
  });

  it('answers a request no policy covers with the same empty list every time', () => {
    const policies = view(summary('other-key', { key_ids: ['key_b'] }, ['POINT_INPUT']));
    const first = policies.applying('POINT_INPUT', subject);
    expect(first).toEqual([]);
    expect(policies.applying('POINT_INPUT', { ...subject, keyId: 'key_c' })).toBe(first);
  });

  it('keeps what the edge needs of each policy: its mode, on_error, window and deadline', () => {
    const [policy] = view(summary('p', { all_requests: true }, ['POINT_OUTPUT'])).applying('POINT_OUTPUT', subject);
    expect(policy).toEqual({ name: 'p', streamWindow: { tokens: 50, ms: 300 }, enforced: false, onError: 'block', restoreMasked: true, deadlineMs: 120 });
  });

  it('applies nothing before its first snapshot', () => {
    const watched = new WatchedPolicies({} as GuardServiceClient, logger);
    expect(watched.ready).toBe(false);
    expect(watched.applying('POINT_INPUT', subject)).toEqual([]);
  });
});
