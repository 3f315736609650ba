/**
 * One group's search: brute force while small, an HNSW index (usearch) past its size, which finds
 * the same nearest member with the same similarity as brute force, and goes when the group shrinks.
 */
import { describe, expect, it } from 'vitest';
import { eventually, seededRandom as random } from '@gateway/testing';
import { type Member, VectorGroup } from './vector-group.js';
import { unitVector, vectorBytes } from './vectors.js';

const randomVector = (next: () => number, dimensions: number) => unitVector(vectorBytes(Array.from({ length: dimensions }, () => next() - 0.5)))!;

let label = 0n;
const member = (key: string, vector: Float32Array, expiresAtMs = Number.MAX_SAFE_INTEGER): Member => ({
  key,
  vector,
  storedAtMs: 0,
  expiresAtMs,
  label: ++label,
});
const always = () => true;
/** Resolves once the group's HNSW index is built (it is built a slice at a time). */
const built = (group: VectorGroup) => eventually(() => group.searchedByAnn, 'the HNSW index', 10_000, 1);

describe('VectorGroup', () => {
  it('finds the nearest member by brute force while small, and replaces a member of the same key', () => {
    const group = new VectorGroup(2, 1_024);
    group.add(member('east', unitVector(vectorBytes([1, 0]))!));
    group.add(member('north', unitVector(vectorBytes([0, 1]))!));
    const query = unitVector(vectorBytes([1, 0.1]))!;
    expect(group.nearest(query, always)).toMatchObject({ member: { key: 'east' }, similarity: expect.closeTo(0.995, 3) });
    group.add(member('east', unitVector(vectorBytes([-1, 0]))!));
    expect(group.members.size).toBe(2);
    expect(group.nearest(query, always)?.member.key).toBe('north');
    expect(group.searchedByAnn).toBe(false);
  });

  it('never compares a query of another length', () => {
    const group = new VectorGroup(2, 1_024);
    group.add(member('east', unitVector(vectorBytes([1, 0]))!));
    expect(group.nearest(unitVector(vectorBytes([1, 0, 0]))!, always)).toBeUndefined();
  });

  it('passes over the members `live` refuses', () => {
    const group = new VectorGroup(2, 1_024);
    const gone = member('east', unitVector(vectorBytes([1, 0]))!);
    group.add(gone);
    group.add(member('north', unitVector(vectorBytes([0, 1]))!));
    expect(group.nearest(unitVector(vectorBytes([1, 0]))!, (candidate) => candidate !== gone)?.member.key).toBe('north');
  });

  it('past its size searches an HNSW index that finds what brute force finds, with the same similarity', async () => {
    const next = random(7);
    const dimensions = 48;
    const group = new VectorGroup(dimensions, 1_024);
    for (let index = 0; index < 2_000; index++) group.add(member(`k${index}`, randomVector(next, dimensions)));
    // Brute force answers while it is built.
    expect(group.searchedByAnn).toBe(false);
    expect(group.nearest(group.members.get('k5')!.vector, always)?.member.key).toBe('k5');
    await built(group);
    const queries = [
      ...Array.from({ length: 50 }, () => randomVector(next, dimensions)),
      // Near copies of kept questions: what a paraphrase looks like.
      ...Array.from({ length: 50 }, (_, index) => {
        const kept = group.members.get(`k${index * 37}`)!.vector;
        return unitVector(vectorBytes(Array.from(kept, (value) => value + (next() - 0.5) * 0.05)))!;
      }),
    ];
    for (const query of queries) {
      const exact = group.nearestByBruteForce(query, always)!;
      const found = group.nearest(query, always)!;
      expect(found.member.key).toBe(exact.member.key);
      expect(found.similarity).toBeCloseTo(exact.similarity, 6);
    }
  });

  it('drops its HNSW index when it shrinks to half its size, and keeps finding members', async () => {
    const next = random(11);
    const group = new VectorGroup(8, 64);
    const members = Array.from({ length: 100 }, (_, index) => member(`k${index}`, randomVector(next, 8)));
    for (const item of members) group.add(item);
    await built(group);
    const bytesWithAnn = group.bytes;
    for (const item of members.slice(0, 70)) group.remove(item);
    expect(group.searchedByAnn).toBe(false);
    expect(group.bytes).toBeLessThan(bytesWithAnn);
    expect(group.nearest(members[80]!.vector, always)?.member.key).toBe('k80');
  });

  it('builds its HNSW index anew after many removals, still finding every member left', async () => {
    const next = random(13);
    const group = new VectorGroup(8, 64);
    const members = Array.from({ length: 400 }, (_, index) => member(`k${index}`, randomVector(next, 8)));
    for (const item of members.slice(0, 200)) group.add(item);
    // Churn: each new member replaces an old one, so the index marks many removed.
    for (const [index, item] of members.slice(200).entries()) {
      group.remove(members[index]!);
      group.add(item);
    }
    await built(group);
    for (const item of members.slice(350)) expect(group.nearest(item.vector, always)?.member.key).toBe(item.key);
  });
});
