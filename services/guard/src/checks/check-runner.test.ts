import { describe, expect, it } from 'vitest';
import type { CheckRequestOutput } from '@gateway/proto';
import { createGuardMetrics } from '../guard-metrics.js';
import type { StoredCheck, StoredPolicy } from '../policies/policy.js';
import { type CompiledPolicy, defaultTail, runCheck } from './check-runner.js';
import { createPatternsScanner } from './patterns.js';
import type { Scanner } from './scanner.js';

function compiled(name: string, scanner: Scanner, check: Partial<StoredCheck> = {}, policy: Partial<StoredPolicy> = {}, windowChars = 256): CompiledPolicy {
  const stored: StoredCheck = { name: 'c', points: ['input', 'output'], action: 'mask', kind: 'patterns', ...check };
  return {
    policy: {
      name,
      description: '',
      enabled: true,
      mode: 'enforce',
      on_error: 'allow',
      attachment: { key_ids: [], team_ids: [], models: [], all_requests: true },
      checks: [stored],
      stream_window: { tokens: 0, ms: 0 },
      restore_masked: false,
      updated_at_ms: 1,
      ...policy,
    },
    checks: [{ check: stored, scanner, deadlineMs: 200 }],
    windowChars,
  };
}

const run = (policies: CompiledPolicy[], texts: string[], final: boolean) =>
  runCheck(
    {
      request_id: 'r',
      point: 'POINT_OUTPUT',
      policies: policies.map((policy) => policy.policy.name),
      texts: texts.map((text, index) => ({ path: `t${index}`, text })),
      final,
    } as CheckRequestOutput,
    {
      policies: new Map(policies.map((policy) => [policy.policy.name, policy])),
      signal: new AbortController().signal,
      maxChars: 1_000_000,
      metrics: createGuardMetrics(undefined),
    },
  );

describe('defaultTail', () => {
  it('is the trailing token, or the trailing number with its separators, never the space before it', () => {
    expect(defaultTail('the key sk-abc')).toBe('sk-abc'.length);
    expect(defaultTail('card 4111 1111')).toBe('4111 1111'.length);
    expect(defaultTail('call +1 (415) 555')).toBe('+1 (415) 555'.length);
    expect(defaultTail('ends with a space ')).toBe(0);
    expect(defaultTail('')).toBe(0);
  });
});

describe('runCheck', () => {
  const codes = compiled('codes', createPatternsScanner({ words: ['red alert'], patterns: ['CODE-[0-9]{4}'], entity: 'code' }));

  it('masks what is found and releases the rest, holding the start of a word on a window that more text follows', async () => {
    const answer = await run([codes], ['use CODE-1234 then red al'], false);
    expect(answer.texts[0]).toEqual({ text: 'use <CODE_1> then ', held_chars: 'red al'.length });
    expect(answer.decisions).toHaveLength(1);
  });

  it('holds a finding that reaches into the held tail whole, and decides on it with the text that follows', async () => {
    const first = await run([codes], ['see CODE-12'], false);
    expect(first.texts[0]).toEqual({ text: 'see ', held_chars: 'CODE-12'.length });
    expect(first.decisions).toEqual([]);
    const next = await run([codes], ['CODE-1234.'], true);
    expect(next.texts[0]).toEqual({ text: '<CODE_1>.', held_chars: 0 });
  });

  it('holds at most two windows: past them, what is found is decided on now rather than let out unchecked', async () => {
    const small = compiled('small', createPatternsScanner({ words: [], patterns: ['CODE-[0-9]{4}'], entity: 'code' }), {}, {}, 4);
    const answer = await run([small], [`x ${'A'.repeat(20)}CODE-1234${'B'.repeat(20)}`], false);
    // The trailing token is 49 characters; two windows are 8: the rest goes now, its code masked.
    expect(answer.texts[0]!.held_chars).toBeLessThanOrEqual(8 + 'CODE-1234'.length);
    expect(answer.texts[0]!.text).not.toContain('CODE-1234');
  });

  it('masks the whole text for a finding without a span, and blocks for a block check', async () => {
    const category: Scanner = { scan: (texts) => texts.map((text) => (text.includes('bad') ? [{ entity: 'flagged_harm', start: -1, end: -1 }] : [])) };
    const masked = await run([compiled('moderation', category)], ['this is bad', 'fine'], true);
    expect(masked.texts.map((text) => text.text)).toEqual(['<FLAGGED_HARM_1>', 'fine']);
    const blocked = await run([compiled('moderation', category, { action: 'block' })], ['this is bad'], true);
    expect(blocked).toMatchObject({ blocked: true, blocked_by_policy: 'moderation', blocked_by_check: 'c' });
  });

  it('decides by on_error for a scanner that fails or runs past its deadline', async () => {
    const failing: Scanner = { scan: () => Promise.reject(new Error('boom')) };
    const stuck: Scanner = { scan: () => new Promise(() => undefined) };
    const policies = [compiled('fails', failing, {}, { on_error: 'block' }), compiled('hangs', stuck)];
    policies[1]!.checks = [{ ...policies[1]!.checks[0]!, deadlineMs: 20 }];
    const answer = await run(policies, ['text'], true);
    expect(answer).toMatchObject({ blocked: true, blocked_by_policy: 'fails' });
    expect(answer.decisions.map((decision) => [decision.policy, decision.action, decision.error])).toEqual([
      ['fails', 'ACTION_BLOCK', 'internal'],
      ['hangs', 'ACTION_FLAG', 'deadline_exceeded'],
    ]);
  });

  it('in monitor mode records what it would do and changes nothing', async () => {
    const answer = await run([compiled('watch', codes.checks[0]!.scanner, { action: 'block' }, { mode: 'monitor' })], ['CODE-9999'], true);
    expect(answer.blocked).toBe(false);
    expect(answer.texts[0]!.text).toBe('CODE-9999');
    expect(answer.decisions[0]).toMatchObject({ enforced: false, action: 'ACTION_BLOCK', start: 0, end: 9 });
  });
});
