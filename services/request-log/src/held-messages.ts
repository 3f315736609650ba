/**
 * The messages being written: while PostgreSQL is away they wait for it for as long as it takes,
 * each kept from redelivery (JetStream's "in progress", `working()`) before its acknowledgement time
 * runs out, so that no replica takes them meanwhile and each is written once, as soon as it
 * returns. One timer for all of them, every third of the acknowledgement time (100 ms at least),
 * while any is held.
 */
import type { JsMsg } from 'nats';

export class HeldMessages {
  private readonly held = new Set<JsMsg>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ackWaitMs: number) {}

  /** Keeps the message in progress until released. */
  hold(delivery: JsMsg): void {
    this.held.add(delivery);
    this.timer ??= setInterval(
      () => {
        if (this.held.size === 0) this.close();
        for (const message of this.held) message.working();
      },
      Math.max(100, Math.floor(this.ackWaitMs / 3)),
    ).unref();
  }

  /** The message was written (and acknowledged) or handed back. */
  release(delivery: JsMsg): void {
    this.held.delete(delivery);
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
