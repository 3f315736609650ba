/** The semantic index's names and values in Redis, read back as they were written. */
import { describe, expect, it } from 'vitest';
import { announcement, groupName, isAfter, parseVectorKey, readAnnouncement, readVectorValue, vectorKey, vectorValue } from './semantic-keys.js';
import { vectorBytes } from './vectors.js';

const parts = {
  scope: 'team:team_A',
  generations: '0.0.0',
  modelId: 'gpt-4o-mini',
  embeddingModel: 'text-embedding-3-small',
  context: 'c'.repeat(64),
  dimensions: 3,
};

describe('groupName', () => {
  it('is 32 hex digits that change with each part', () => {
    const name = groupName(parts);
    expect(name).toMatch(/^[0-9a-f]{32}$/);
    for (const change of [
      { scope: 'team:team_B' },
      { generations: '0.1.0' },
      { modelId: 'gpt-4o' },
      { embeddingModel: 'e5' },
      { context: 'd' },
      { dimensions: 4 },
    ])
      expect(groupName({ ...parts, ...change })).not.toBe(name);
    // Parts that run together are still told apart.
    expect(groupName({ ...parts, scope: 'a', modelId: 'b:c' })).not.toBe(groupName({ ...parts, scope: 'a:b', modelId: 'c' }));
  });
});

describe('vector keys', () => {
  it('name their group and key, which read back', () => {
    const group = groupName(parts);
    const name = vectorKey('cache:', group, 'k'.repeat(64));
    expect(name).toBe(`cache:v:${group}:${'k'.repeat(64)}`);
    expect(parseVectorKey('cache:', name)).toEqual({ group, key: 'k'.repeat(64) });
    expect(parseVectorKey('other:', name)).toBeUndefined();
    expect(parseVectorKey('cache:', 'cache:v:short:key')).toBeUndefined();
  });

  it('hold when they were stored and the vector, normalized when read', () => {
    const read = readVectorValue(vectorValue(1_700_000_000_123, vectorBytes([0, 3, 4])))!;
    expect(read.storedAtMs).toBe(1_700_000_000_123);
    expect(Array.from(read.vector)).toEqual([0, expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)]);
    expect(readVectorValue(Buffer.alloc(10))).toBeUndefined();
  });
});

describe('announcements', () => {
  it('read back as the vector they announce, and refuse what is not one', () => {
    const group = groupName(parts);
    const fields = announcement(group, 'k1', vectorValue(5, vectorBytes([1, 0])), 65).map((field) => Buffer.from(field));
    expect(readAnnouncement(fields)).toEqual({ group, key: 'k1', vector: new Float32Array([1, 0]), storedAtMs: 5, expiresAtMs: 65 });
    expect(readAnnouncement(fields.slice(0, 4))).toBeUndefined();
    expect(readAnnouncement([Buffer.from('g'), Buffer.from('short'), ...fields.slice(2)])).toBeUndefined();
  });
});

describe('isAfter', () => {
  it('orders stream ids by time, then sequence', () => {
    expect(isAfter('2-0', '1-5')).toBe(true);
    expect(isAfter('1-6', '1-5')).toBe(true);
    expect(isAfter('1-5', '1-5')).toBe(false);
    expect(isAfter('10-0', '9-9')).toBe(true);
  });
});
