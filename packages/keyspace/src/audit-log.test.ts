import { describe, expect, it } from 'vitest';
import { publicJson } from './audit-log.js';

describe('publicJson', () => {
  it('drops every field named like a secret or a hash, at any depth, and keeps the rest', () => {
    const facts = {
      key_id: 'key_0123456789abcdef',
      secret: 'br-abc',
      name: 'ci',
      nested: { secret_hash: 'f00', api_key: 'br-x', tokens_per_minute: { per_minute: 5 } },
      list: [{ password: 'p', token_id: 'adt_1' }],
    };
    expect(JSON.parse(publicJson(facts))).toEqual({
      key_id: 'key_0123456789abcdef',
      name: 'ci',
      nested: { tokens_per_minute: { per_minute: 5 } },
      list: [{ token_id: 'adt_1' }],
    });
  });

  it('is empty for nothing, so a creation has no before', () => {
    expect(publicJson(undefined)).toBe('');
  });
});
