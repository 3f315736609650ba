import { describe, expect, it } from 'vitest';
import type { PolicyJson } from './admin-api';
import { attachmentOf, kindOf } from './policy-summary';

const none = { key_ids: [], team_ids: [], models: [], all_requests: false };

describe('policy summary', () => {
  it('names all requests, or the keys, teams and models a policy is attached to', () => {
    expect(attachmentOf({ attachment: { ...none, all_requests: true } } as unknown as PolicyJson)).toBe('all requests');
    expect(attachmentOf({ attachment: { ...none, key_ids: ['k1'], models: ['gpt-4o'] } } as unknown as PolicyJson)).toBe('keys k1; models gpt-4o');
    expect(attachmentOf({ attachment: none } as unknown as PolicyJson)).toBe('nothing');
  });
  it('names the kind of a check by its one member set', () => {
    expect(kindOf({ name: 'c', points: ['input'], action: 'block', pii: { entities: ['credit_card'], default_phone_region: '' } })).toBe('pii');
    expect(kindOf({ name: 'c', points: ['input'], action: 'block', secrets: {} })).toBe('secrets');
  });
});
