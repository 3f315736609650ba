/**
 * A queue of items by age, oldest first (a binary min-heap on `storedAtMs`): what the semantic
 * index drops when it is over its byte bound. Removal is lazy: an item taken out of the index stays
 * in the heap until it reaches the top, where `live` says to pass it over, and the heap is rebuilt
 * from the live items whenever the dead ones outnumber them.
 */

/** What the queue orders. */
export interface Aged {
  readonly storedAtMs: number;
}

/** Items by age, oldest first; `live` says whether an item is still held. */
export class OldestFirst<T extends Aged> {
  private items: T[] = [];
  private dead = 0;

  constructor(private readonly live: (item: T) => boolean) {}

  /** How many items the heap holds, dead ones included. */
  get size(): number {
    return this.items.length;
  }

  push(item: T): void {
    this.items.push(item);
    this.up(this.items.length - 1);
  }

  /** Counts one item as no longer live; rebuilds the heap once the dead outnumber the living. */
  forget(): void {
    this.dead++;
    if (this.dead > 1_024 && this.dead * 2 > this.items.length) this.compact();
  }

  /** The oldest live item, left in place; undefined when none. */
  peek(): T | undefined {
    this.skipDead();
    return this.items[0];
  }

  /** Takes the oldest live item out; undefined when none. */
  pop(): T | undefined {
    this.skipDead();
    return this.take();
  }

  private skipDead(): void {
    while (this.items.length > 0 && !this.live(this.items[0]!)) {
      this.take();
      this.dead = Math.max(0, this.dead - 1);
    }
  }

  private take(): T | undefined {
    const top = this.items[0];
    const last = this.items.pop();
    if (this.items.length > 0 && last !== undefined) {
      this.items[0] = last;
      this.down(0);
    }
    return top;
  }

  private compact(): void {
    const living = this.items.filter(this.live);
    this.items = [];
    this.dead = 0;
    for (const item of living) this.push(item);
  }

  private up(index: number): void {
    const items = this.items;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (items[parent]!.storedAtMs <= items[index]!.storedAtMs) return;
      [items[parent], items[index]] = [items[index]!, items[parent]!];
      index = parent;
    }
  }

  private down(index: number): void {
    const items = this.items;
    for (;;) {
      const [left, right] = [index * 2 + 1, index * 2 + 2];
      let least = index;
      if (left < items.length && items[left]!.storedAtMs < items[least]!.storedAtMs) least = left;
      if (right < items.length && items[right]!.storedAtMs < items[least]!.storedAtMs) least = right;
      if (least === index) return;
      [items[least], items[index]] = [items[index]!, items[least]!];
      index = least;
    }
  }
}
