/**
 * The credit window that paces each streamed call (flow control per call, within one stream):
 * `SendCredit` is the server's count of the events it may still send, `CallEvents` the caller's
 * queue that grants credit back as its consumer takes events. The accounting is described in
 * proto/gateway/rpc/v1/STREAMED_CALLS.md ("Credit").
 */
import type { GatewayError } from './gateway-error.js';

/** The events a streamed call's handler may still send before it waits for credit. */
export class SendCredit {
  /** Infinity without flow control (a window of 0). */
  #left: number;
  /** Wakes a handler waiting for credit. */
  #wake: (() => void) | undefined;

  /** `window` as the request carried it; 0 (or none) means no limit. */
  constructor(window: number) {
    this.#left = window || Number.POSITIVE_INFINITY;
  }

  /** The caller granted `events` more: added to what is left, and a waiting handler woken. */
  grant(events: number): void {
    this.#left += events;
    this.#wake?.();
  }

  /** Takes one event's credit; false when none is left. */
  take(): boolean {
    if (this.#left <= 0) return false;
    this.#left -= 1;
    return true;
  }

  /** Resolves at the next grant, or when `signal` aborts; leaves no listener behind either way. */
  whenGranted(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        this.#wake = undefined;
        signal.removeEventListener('abort', wake);
        resolve();
      };
      this.#wake = wake;
      signal.addEventListener('abort', wake, { once: true });
    });
  }
}

/**
 * The events of one streamed call, as an async iterator. Events are queued as they arrive (at
 * most the call's window ahead of the consumer, which the server respects); each time the
 * consumer has taken half the window, that much credit is granted back. Leaving the iteration
 * early (break, throw, return()) cancels the call on the server.
 */
export class CallEvents<Event> implements AsyncIterableIterator<Event> {
  readonly #queue: Event[] = [];
  readonly #grantEvery: number;
  readonly #grant: (events: number) => void;
  readonly #giveUp: () => void;
  #done = false;
  #error: GatewayError | undefined;
  #waiting: { resolve(result: IteratorResult<Event>): void; reject(error: GatewayError): void } | undefined;
  /** The consumer holds an event it has not finished with (it has not asked for the next). */
  #holding = false;
  #taken = 0;

  /** `grant` sends credit to the server; `giveUp` cancels the call there (the consumer left early). */
  constructor(window: number, grant: (events: number) => void, giveUp: () => void) {
    this.#grantEvery = window > 0 ? Math.max(1, Math.floor(window / 2)) : Number.POSITIVE_INFINITY;
    this.#grant = grant;
    this.#giveUp = giveUp;
  }

  /** One more event from the server; ignored once the call is over. */
  push(event: Event): void {
    if (this.#done) return;
    const waiting = this.#waiting;
    if (!waiting) {
      this.#queue.push(event);
      return;
    }
    this.#waiting = undefined;
    this.#holding = true;
    waiting.resolve({ value: event, done: false });
  }

  /** No event follows: the iteration ends after the queued ones, with `error` when given. */
  end(error?: GatewayError): void {
    if (this.#done) return;
    this.#done = true;
    this.#error = error;
    const waiting = this.#waiting;
    if (!waiting) return;
    this.#waiting = undefined;
    if (error) waiting.reject(error);
    else waiting.resolve({ value: undefined, done: true });
  }

  /** The next event; asking for it means the one before is consumed, which may grant credit. */
  next(): Promise<IteratorResult<Event>> {
    if (this.#holding) this.#consumed();
    if (this.#queue.length > 0) {
      this.#holding = true;
      return Promise.resolve({ value: this.#queue.shift()!, done: false });
    }
    if (this.#done) {
      const error = this.#error;
      this.#error = undefined;
      return error ? Promise.reject(error) : Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  /** Leaves the iteration: the call is cancelled unless it is already over. */
  return(): Promise<IteratorResult<Event>> {
    if (!this.#done) this.#giveUp();
    this.#done = true;
    this.#error = undefined;
    this.#queue.length = 0;
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Event> {
    return this;
  }

  /** The consumer is done with the event it held: every half window taken is granted back. */
  #consumed(): void {
    this.#holding = false;
    this.#taken += 1;
    if (this.#taken >= this.#grantEvery && !this.#done) {
      this.#grant(this.#taken);
      this.#taken = 0;
    }
  }
}
