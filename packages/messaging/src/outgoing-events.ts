/**
 * What a UsagePublisher holds on the way to the stream: the messages it formed (one event, or a
 * batch of the events published in one turn of the event loop), the queues they wait in, and the
 * window of attempts awaiting their acknowledgement. The delivery contract is written up in
 * proto/gateway/usage/v1/USAGE_DELIVERY.md.
 */
import { randomUUID } from 'node:crypto';
import type { MsgHdrs } from 'nats';
import type { UsageEvent } from '@gateway/proto';
import { encodeUsageEvent, encodeUsageEventBatch } from './usage-codec.js';

/** One event on its way to the stream. */
export interface OutgoingEvent {
  /** The JetStream message id: the event's id, or for a batch an id drawn for the batch. */
  eventId: string;
  /** Encoded once when queued; every attempt sends the same bytes. */
  bytes: Uint8Array;
  /** The usage events it carries: 1, or a UsageEventBatch's. */
  count: number;
  /** Built at the first attempt and reused by every retry, so a retry carries the same message id. */
  headers?: MsgHdrs;
  /** When the current attempt was sent (monotonic clock, ms); meaningful only while in flight. */
  sentAt: number;
  /** When it was formed (monotonic clock, ms): how long its events have been held, whatever became of its attempts. */
  heldSince: number;
}

/**
 * One message formed of events published together (at least one): a single event keeps its own id
 * as the message id; a batch gets an id of its own, kept by every retry. Throws when an event
 * cannot be encoded.
 */
export function formMessage(events: readonly UsageEvent[], heldSince = performance.now()): OutgoingEvent {
  if (events.length === 1) return { eventId: events[0]!.event_id!, bytes: encodeUsageEvent(events[0]!), count: 1, sentAt: 0, heldSince };
  return { eventId: `batch-${randomUUID()}`, bytes: encodeUsageEventBatch(events as UsageEvent[]), count: events.length, sentAt: 0, heldSince };
}

/**
 * The earliest heldSince of some events (Infinity for none). Read when metrics are scraped, not per
 * event: a pass over what is held (at most the publisher's maxQueue) every scrape costs little.
 */
function earliestHeldSince(events: Iterable<OutgoingEvent | undefined>): number {
  let earliest = Number.POSITIVE_INFINITY;
  for (const event of events) if (event && event.heldSince < earliest) earliest = event.heldSince;
  return earliest;
}

/**
 * First in, first out, taking from the front in constant time. Array#shift moves every element once
 * the array is large (and an outage can queue 100,000 events), so the front is an index instead.
 */
export class EventQueue {
  private items: Array<OutgoingEvent | undefined> = [];
  private head = 0;
  /** The usage events its entries carry. */
  events = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(event: OutgoingEvent): void {
    this.events += event.count;
    this.items.push(event);
  }

  /** Puts an event back before all others: one taken from the front that could not be sent. */
  unshift(event: OutgoingEvent): void {
    this.events += event.count;
    if (this.head > 0) this.items[--this.head] = event;
    else this.items.unshift(event);
  }

  /** The earliest heldSince of its entries; Infinity when empty. */
  earliestHeldSince(): number {
    let earliest = Number.POSITIVE_INFINITY;
    for (let index = this.head; index < this.items.length; index += 1) earliest = Math.min(earliest, this.items[index]?.heldSince ?? earliest);
    return earliest;
  }

  /** Removes and returns, in queue order, the entries held since heldSince or before; O(entries). */
  takeHeldSince(heldSince: number): OutgoingEvent[] {
    const taken: OutgoingEvent[] = [];
    const kept: OutgoingEvent[] = [];
    for (let index = this.head; index < this.items.length; index += 1) {
      const event = this.items[index];
      if (!event) continue;
      if (event.heldSince <= heldSince) {
        taken.push(event);
        this.events -= event.count;
      } else kept.push(event);
    }
    if (taken.length > 0) {
      this.items = kept;
      this.head = 0;
    }
    return taken;
  }

  shift(): OutgoingEvent | undefined {
    if (this.head === this.items.length) return undefined;
    const event = this.items[this.head];
    if (event) this.events -= event.count;
    // Released at once so that a sent event's bytes belong to the window alone.
    this.items[this.head] = undefined;
    this.head += 1;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      // Reclaim the taken half; amortised over the events taken, so still constant time each.
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return event;
  }
}

/**
 * The events sent and awaiting their acknowledgement, by the number their reply subject ends with.
 * Every attempt gets a new number, so the late acknowledgement of an attempt already given up on
 * finds nothing and cannot count an event twice. A Map iterates in insertion order, which is send
 * order, so the expired attempts are always its first entries.
 */
export class AckWindow {
  private readonly entries = new Map<number, OutgoingEvent>();
  private lastNumber = 0;
  /** The usage events its attempts carry. */
  events = 0;

  get size(): number {
    return this.entries.size;
  }

  /** Records an attempt sent now and returns the number its reply subject must end with. */
  add(event: OutgoingEvent, now: number): number {
    this.lastNumber += 1;
    event.sentAt = now;
    this.events += event.count;
    this.entries.set(this.lastNumber, event);
    return this.lastNumber;
  }

  /** The earliest heldSince of its attempts; Infinity when empty. */
  earliestHeldSince(): number {
    return earliestHeldSince(this.entries.values());
  }

  /** Removes and returns the attempt with this number, or undefined when it is no longer awaited. */
  take(number: number): OutgoingEvent | undefined {
    const event = this.entries.get(number);
    if (event) {
      this.entries.delete(number);
      this.events -= event.count;
    }
    return event;
  }

  /** Removes and returns, oldest first, the attempts sent at or before sentAtOrBefore. */
  takeSentBefore(sentAtOrBefore: number): OutgoingEvent[] {
    const expired: OutgoingEvent[] = [];
    for (const [number, event] of this.entries) {
      if (event.sentAt > sentAtOrBefore) break;
      this.entries.delete(number);
      this.events -= event.count;
      expired.push(event);
    }
    return expired;
  }

  /** Removes and returns every attempt, oldest first. */
  takeAll(): OutgoingEvent[] {
    const all = [...this.entries.values()];
    this.entries.clear();
    this.events = 0;
    return all;
  }
}
