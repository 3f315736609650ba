/**
 * What an edge does with the usage events NATS does not take: at shutdown handOver gives every event
 * still held to metering (here a recorder of the test's), in bounded calls, and counts whatever it
 * could not hand over as dropped (`closed`), never both and never neither; while running, the
 * events held handOverAfterMs go to metering as well, and those it refuses are held again.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { eventually } from '@gateway/testing';
import type { UsageEventOutput } from '@gateway/proto';
import { UsagePublisher } from './usage-publisher.js';

const logger = createLogger('handover-test', 'silent');

/** A publisher whose NATS never connects: every event it accepts stays held, as in an outage. */
async function holding(events: number): Promise<UsagePublisher> {
  const publisher = new UsagePublisher(new Promise(() => {}), logger, { maxBatch: 8 });
  for (let index = 0; index < events; index += 1) {
    publisher.publish({ event_id: `event-${index}`, key_id: 'key_test', model_id: 'sim-mini' });
    // Several turns of the event loop: several messages, batches of up to 8 among them.
    if (index % 5 === 4) await new Promise((resolve) => setImmediate(resolve));
  }
  return publisher;
}

describe('UsagePublisher.handOver', () => {
  it('hands every held event over once, in calls of at most maxBatch, and holds nothing after', async () => {
    const publisher = await holding(130);
    expect(publisher.pending).toBe(130);
    const calls: UsageEventOutput[][] = [];
    const handed = await publisher.handOver(async (events) => void calls.push(events), 5_000, 50);
    expect(handed).toBe(130);
    expect(calls.map((call) => call.length)).toEqual([50, 50, 30]);
    const ids = calls.flat().map((event) => event.event_id);
    expect(new Set(ids).size).toBe(130);
    expect(ids.sort()).toEqual(Array.from({ length: 130 }, (_, index) => `event-${index}`).sort());
    expect(publisher.pending).toBe(0);
    expect(publisher.handedOver).toBe(130);
    expect(publisher.dropped).toBe(0);
    // Closed for good: a late event is dropped, and closing again drops nothing more.
    publisher.publish({ event_id: 'late', key_id: 'key_test' });
    publisher.close();
    expect(publisher.droppedBy.closed).toBe(1);
  });

  it('counts the events a failed call left behind as dropped (closed)', async () => {
    const publisher = await holding(120);
    let call = 0;
    const handed = await publisher.handOver(
      async () => {
        call += 1;
        if (call === 2) throw new Error('metering unavailable');
      },
      5_000,
      50,
    );
    expect(handed).toBe(50);
    expect(publisher.handedOver).toBe(50);
    expect(publisher.droppedBy.closed).toBe(70);
    expect(publisher.pending).toBe(0);
  });

  it('stops at its time budget, and gives each call the time left', async () => {
    const publisher = await holding(30);
    const budgets: number[] = [];
    const handed = await publisher.handOver(
      async (_events, timeoutMs) => {
        budgets.push(timeoutMs);
        await new Promise((resolve) => setTimeout(resolve, 150));
      },
      250,
      10,
    );
    expect(handed).toBe(20);
    expect(budgets).toHaveLength(2);
    expect(budgets[0]).toBeLessThanOrEqual(250);
    expect(budgets[1]).toBeLessThan(budgets[0]!);
    expect(publisher.droppedBy.closed).toBe(10);
  });
});

describe('UsagePublisher with handOverTo', () => {
  it('hands the events held handOverAfterMs to metering while NATS does not take them, each once, none sooner', async () => {
    const handedAt = new Map<string, number>();
    const publishedAt = new Map<string, number>();
    let calls = 0;
    const publisher = new UsagePublisher(new Promise(() => {}), logger, {
      handOverAfterMs: 300,
      handOverTo: async (events) => {
        // The first hand-over is refused (metering unavailable): its events are held again.
        calls += 1;
        if (calls === 1) throw new Error('metering unavailable');
        for (const event of events) {
          expect(handedAt.has(event.event_id!)).toBe(false);
          handedAt.set(event.event_id!, performance.now());
        }
      },
    });
    try {
      for (const round of [0, 1, 2]) {
        for (let index = 0; index < 2; index += 1) {
          const id = `event-${round}-${index}`;
          publishedAt.set(id, performance.now());
          publisher.publish({ event_id: id, key_id: 'key_test', model_id: 'sim-mini' });
        }
        await eventually(() => (handedAt.size === (round + 1) * 2 ? true : undefined), `round ${round} to be handed over`, 10_000, 20);
        expect(publisher.pending).toBe(0);
        expect(publisher.oldestHeldAgeSeconds).toBe(0);
      }
      for (const [id, at] of handedAt) expect(at - publishedAt.get(id)!).toBeGreaterThanOrEqual(300);
      expect(publisher.handedOver).toBe(6);
      expect(publisher.dropped).toBe(0);
      // One refused call, then one a round.
      expect(calls).toBe(4);
    } finally {
      publisher.close();
    }
  });
});
