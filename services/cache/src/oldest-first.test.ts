/** The age queue of the semantic index: oldest first, the items no longer held passed over. */
import { describe, expect, it } from 'vitest';
import { OldestFirst } from './oldest-first.js';

describe('OldestFirst', () => {
  it('gives the oldest first, whatever the order they came in', () => {
    const queue = new OldestFirst<{ storedAtMs: number }>(() => true);
    for (const storedAtMs of [5, 1, 4, 2, 3]) queue.push({ storedAtMs });
    expect([1, 2, 3, 4, 5].map(() => queue.pop()?.storedAtMs)).toEqual([1, 2, 3, 4, 5]);
    expect(queue.pop()).toBeUndefined();
  });

  it('passes over the items no longer live, and compacts once they outnumber the rest', () => {
    const live = new Set<number>();
    const queue = new OldestFirst<{ storedAtMs: number }>((item) => live.has(item.storedAtMs));
    for (let at = 0; at < 5_000; at++) {
      live.add(at);
      queue.push({ storedAtMs: at });
    }
    for (let at = 0; at < 4_000; at++) {
      live.delete(at);
      queue.forget();
    }
    expect(queue.size).toBeLessThan(5_000);
    expect(queue.peek()?.storedAtMs).toBe(4_000);
    expect(queue.pop()?.storedAtMs).toBe(4_000);
  });
});
