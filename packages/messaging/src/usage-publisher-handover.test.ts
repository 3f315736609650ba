/**
 * What an edge does at shutdown with the usage events NATS did not take: handOver gives every event
 * still held to metering (here a recorder of the test's), in bounded calls, and counts whatever it
 * could not hand over as dropped (`closed`), never both and never neither.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
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
