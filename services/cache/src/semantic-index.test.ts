/**
 * The bounded semantic index: groups never compared with each other, the oldest vectors dropped
 * first past the byte bound (however late they arrive), expired ones passed over and pruned, and
 * what a rebuild did not find dropped.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '@gateway/testing';
import { type KeptVector, SemanticIndex } from './semantic-index.js';
import { memberBytes } from './vector-group.js';
import type { Member } from './vector-group.js';
import { unitVector, vectorBytes } from './vectors.js';

const NOW = 1_700_000_000_000;
const vector = (...values: number[]) => unitVector(vectorBytes(values))!;
const kept = (key: string, values: number[], storedAtMs = NOW, group = 'g'.repeat(32)): KeptVector => ({
  group,
  key,
  vector: vector(...values),
  storedAtMs,
  expiresAtMs: storedAtMs + 60_000,
});

describe('SemanticIndex', () => {
  it('finds the nearest of a group only, and counts what it holds', () => {
    const index = new SemanticIndex({ maxBytes: 1 << 20 });
    index.add(kept('a', [1, 0]), NOW);
    index.add(kept('b', [0, 1], NOW, 'h'.repeat(32)), NOW);
    expect(index.nearest('g'.repeat(32), vector(0, 1), NOW)).toEqual({ key: 'a', similarity: expect.closeTo(0, 6) });
    expect(index.nearest('h'.repeat(32), vector(0, 1), NOW)).toEqual({ key: 'b', similarity: expect.closeTo(1, 6) });
    expect(index.nearest('i'.repeat(32), vector(0, 1), NOW)).toBeUndefined();
    expect([index.vectors, index.bytes]).toEqual([2, 2 * memberBytes(2, 'a')]);
  });

  it('takes a vector again only when newer, and never one of another length into a group', () => {
    const index = new SemanticIndex({ maxBytes: 1 << 20 });
    expect(index.add(kept('a', [1, 0], NOW), NOW)).toBe(true);
    expect(index.add(kept('a', [0, 1], NOW), NOW)).toBe(false);
    expect(index.add(kept('a', [0, 1], NOW + 1), NOW)).toBe(true);
    expect(index.add(kept('b', [1, 0, 0], NOW), NOW)).toBe(false);
    expect(index.vectors).toBe(1);
    expect(index.nearest('g'.repeat(32), vector(0, 1), NOW)?.similarity).toBeCloseTo(1, 6);
  });

  it('drops the oldest past its byte bound, and refuses one older than all it holds when full', () => {
    const index = new SemanticIndex({ maxBytes: 3 * memberBytes(2, 'a') });
    for (const [key, at] of [
      ['b', 2],
      ['a', 1],
      ['c', 3],
      ['d', 4],
    ] as const)
      index.add(kept(key, [1, at], NOW + at), NOW);
    expect(index.vectors).toBe(3);
    expect(index.get('g'.repeat(32), 'a')).toBeUndefined();
    expect(index.add(kept('z', [1, 0], NOW), NOW)).toBe(false);
    expect(index.get('g'.repeat(32), 'z')).toBeUndefined();
    expect(index.dropped.bound).toBe(2);
    expect(index.bytes).toBeLessThanOrEqual(3 * memberBytes(2, 'a'));
  });

  it('passes over expired vectors, drops them, and prunes the rest', () => {
    const index = new SemanticIndex({ maxBytes: 1 << 20 });
    index.add({ ...kept('old', [1, 0]), expiresAtMs: NOW + 10 }, NOW);
    index.add(kept('new', [0.5, 0.5]), NOW);
    index.add({ ...kept('other', [1, 0], NOW, 'h'.repeat(32)), expiresAtMs: NOW + 10 }, NOW);
    expect(index.nearest('g'.repeat(32), vector(1, 0), NOW + 20)?.key).toBe('new');
    expect(index.prune(NOW + 20)).toBe(1);
    expect([index.vectors, index.dropped.expired]).toEqual([1, 2]);
    expect(index.add({ ...kept('late', [1, 0]), expiresAtMs: NOW }, NOW)).toBe(false);
  });

  it('drops, after a rebuild, what it held from before that the rebuild did not find', () => {
    const index = new SemanticIndex({ maxBytes: 1 << 20 });
    index.add(kept('found', [1, 0]), NOW);
    index.add(kept('lost', [0, 1]), NOW);
    index.add(kept('during', [1, 1], NOW + 5), NOW);
    const seen = new WeakSet<Member>([index.get('g'.repeat(32), 'found')!]);
    expect(index.dropUnseen(seen, NOW + 1)).toBe(1);
    expect(index.get('g'.repeat(32), 'lost')).toBeUndefined();
    expect(index.get('g'.repeat(32), 'during')).toBeDefined();
    index.remove('g'.repeat(32), 'found');
    expect([index.vectors, index.dropped.gone]).toEqual([1, 2]);
  });

  it('counts the HNSW index of a large group in its bytes, and in its groups searched by it', async () => {
    const index = new SemanticIndex({ maxBytes: 1 << 24, annAt: 8 });
    for (let at = 0; at < 10; at++) index.add(kept(`k${at}`, [1, at, 2], NOW + at), NOW);
    await eventually(() => index.annGroups === 1, 'the HNSW index', 5_000, 1);
    expect(index.bytes).toBeGreaterThan(10 * memberBytes(3, 'k0'));
    for (let at = 0; at < 10; at++) index.remove('g'.repeat(32), `k${at}`);
    expect([index.vectors, index.bytes, index.annGroups]).toEqual([0, 0, 0]);
  });
});
