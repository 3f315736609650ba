/**
 * The usage publisher's queue and acknowledgement window against plain reference models, under
 * random sequences (fast-check): the queue stays first in, first out through its index-based front
 * and its compaction (which starts past 1,024 entries taken), a failed message put back goes first,
 * and both count the events their entries carry; the window gives each attempt a new number,
 * forgets an attempt once taken (so a late acknowledgement counts nothing), and expires attempts
 * oldest first.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { AckWindow, EventQueue, type OutgoingEvent } from './outgoing-events.js';

const message = (id: number, count: number): OutgoingEvent => ({ eventId: `e${id}`, bytes: new Uint8Array(), count, sentAt: 0, heldSince: 0 });
const sum = (events: readonly OutgoingEvent[]) => events.reduce((total, event) => total + event.count, 0);

type QueueStep = { kind: 'push'; times: number; count: number } | { kind: 'shift'; times: number } | { kind: 'unshiftTaken' };

const queueStep: fc.Arbitrary<QueueStep> = fc.oneof(
  fc.record({ kind: fc.constant('push' as const), times: fc.integer({ min: 1, max: 1_500 }), count: fc.integer({ min: 1, max: 64 }) }),
  fc.record({ kind: fc.constant('shift' as const), times: fc.integer({ min: 1, max: 1_500 }) }),
  fc.constant({ kind: 'unshiftTaken' as const }),
);

type WindowStep = { kind: 'add'; count: number; at: number } | { kind: 'take'; number: number } | { kind: 'expire'; back: number } | { kind: 'takeAll' };

const windowStep: fc.Arbitrary<WindowStep> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('add' as const), count: fc.integer({ min: 1, max: 64 }), at: fc.integer({ min: 0, max: 5 }) }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('take' as const), number: fc.integer({ min: 1, max: 60 }) }), weight: 3 },
  fc.record({ kind: fc.constant('expire' as const), back: fc.integer({ min: 0, max: 8 }) }),
  fc.constant({ kind: 'takeAll' as const }),
);

describe('EventQueue (fast-check)', () => {
  it('is first in, first out, puts a failed message back first, and counts the events it holds', () => {
    fc.assert(
      fc.property(fc.array(queueStep, { maxLength: 16 }), (steps) => {
        const queue = new EventQueue();
        const model: OutgoingEvent[] = [];
        let next = 0;
        let lastTaken: OutgoingEvent | undefined;
        for (const step of steps) {
          if (step.kind === 'push') {
            for (let index = 0; index < step.times; index += 1) {
              const pushed = message(next++, step.count);
              queue.push(pushed);
              model.push(pushed);
            }
          } else if (step.kind === 'shift') {
            const taken: Array<OutgoingEvent | undefined> = [];
            const expected: Array<OutgoingEvent | undefined> = [];
            for (let index = 0; index < step.times; index += 1) {
              taken.push(queue.shift());
              expected.push(model.shift());
            }
            expect(taken.every((event, index) => event === expected[index])).toBe(true);
            lastTaken = taken.findLast((event) => event !== undefined) ?? lastTaken;
          } else if (lastTaken) {
            queue.unshift(lastTaken);
            model.unshift(lastTaken);
            lastTaken = undefined;
          }
          expect(queue.length).toBe(model.length);
          expect(queue.events).toBe(sum(model));
        }
        const rest = model.map(() => queue.shift());
        expect(rest.every((event, index) => event === model[index])).toBe(true);
        expect(queue.shift()).toBeUndefined();
        expect(queue.events).toBe(0);
      }),
      { numRuns: 100 },
    );
  });
});

describe('AckWindow (fast-check)', () => {
  it('numbers each attempt anew, forgets what it gave back, and expires the oldest first', () => {
    fc.assert(
      fc.property(fc.array(windowStep, { maxLength: 80 }), (steps) => {
        const window = new AckWindow();
        /** Attempts awaited, by number, in send order. */
        const model = new Map<number, OutgoingEvent>();
        const numbers = new Set<number>();
        let clock = 0;
        for (const step of steps) {
          if (step.kind === 'add') {
            clock += step.at;
            const attempt = message(numbers.size, step.count);
            const number = window.add(attempt, clock);
            expect(numbers.has(number)).toBe(false);
            numbers.add(number);
            model.set(number, attempt);
            expect(attempt.sentAt).toBe(clock);
          } else if (step.kind === 'take') {
            const expected = model.get(step.number);
            model.delete(step.number);
            expect(window.take(step.number)).toBe(expected);
          } else if (step.kind === 'expire') {
            const before = clock - step.back;
            const expired = [...model].filter(([, attempt]) => attempt.sentAt <= before);
            for (const [number] of expired) model.delete(number);
            expect(window.takeSentBefore(before)).toEqual(expired.map(([, attempt]) => attempt));
          } else {
            expect(window.takeAll()).toEqual([...model.values()]);
            model.clear();
          }
          expect(window.size).toBe(model.size);
          expect(window.events).toBe(sum([...model.values()]));
        }
      }),
      { numRuns: 150 },
    );
  });
});
