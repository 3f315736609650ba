/**
 * The circuit breaker of one deployment (a model at one upstream). It opens after
 * `consecutiveFailures` failures in a row, or when more than `errorRate` of the last `window`
 * calls failed (once `minimumCalls` were seen); while open it takes no request; when the wait has
 * passed it lets `probes` requests through at once, and the first of them decides: success closes
 * it, failure opens it again for twice as long (up to `maxOpenMs`). An upstream rate limit with a
 * retry hint holds the deployment out for exactly that long, without counting as a failure.
 *
 * The counting policies are cockatiel's (ConsecutiveBreaker, CountBreaker) and the growing wait is
 * its ExponentialBackoff; the state machine is ours because a streamed call has no single promise
 * to wrap: it succeeds at its first byte (what a caller waits for), and a failure after that is
 * recorded separately. The clock is injected so that tests do not sleep.
 */
import { CircuitState, ConsecutiveBreaker, CountBreaker, ExponentialBackoff, noJitterGenerator, type IBackoff } from 'cockatiel';

/** The breaker's tuning. */
export interface BreakerOptions {
  /** Failures in a row that open it. */
  readonly consecutiveFailures: number;
  /** Share of failed calls (0..1, exclusive) over the window that opens it. */
  readonly errorRate: number;
  /** How many recent calls the error rate is computed over. */
  readonly window: number;
  /** Calls needed in the window before the error rate may open it. */
  readonly minimumCalls: number;
  /** The first wait while open; doubles after each failed probe. */
  readonly openMs: number;
  /** The longest wait while open. */
  readonly maxOpenMs: number;
  /** Requests let through at once while probing. */
  readonly probes: number;
}

/** What a deployment's breaker allows now, as health reports say it. */
export type BreakerState = 'healthy' | 'probing' | 'open';

/** Milliseconds since some origin; Date.now in production. */
export type Clock = () => number;

/** One deployment's breaker. */
export class DeploymentBreaker {
  private readonly consecutive: ConsecutiveBreaker;
  private readonly rate: CountBreaker;
  private readonly backoffFactory: ExponentialBackoff<number>;
  private backoff: IBackoff<unknown> | undefined;
  private circuit: CircuitState = CircuitState.Closed;
  /** While open or held: when requests may be tried again. */
  private until = 0;
  private probesInFlight = 0;
  private listener: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: BreakerOptions,
    private readonly clock: Clock = Date.now,
  ) {
    this.consecutive = new ConsecutiveBreaker(options.consecutiveFailures);
    this.rate = new CountBreaker({ threshold: options.errorRate, size: options.window, minimumNumberOfCalls: Math.min(options.minimumCalls, options.window) });
    this.backoffFactory = new ExponentialBackoff({ initialDelay: options.openMs, maxDelay: options.maxOpenMs, exponent: 2, generator: noJitterGenerator });
  }

  /** Called on every change of `state` (also when an open wait passes), to publish health at once. */
  onChange(listener: () => void): void {
    this.listener = listener;
  }

  /** healthy (closed), probing (the wait passed: requests are probes) or open (takes none). */
  get state(): BreakerState {
    if (this.circuit === CircuitState.Closed) return 'healthy';
    return this.clock() >= this.until ? 'probing' : 'open';
  }

  /** While open: milliseconds until it probes again; 0 otherwise. */
  get retryAfterMs(): number {
    return this.state === 'open' ? Math.max(0, this.until - this.clock()) : 0;
  }

  /**
   * Asks to send one request. Returns false while open, or while probing with every probe slot
   * taken; true otherwise, and the caller must then report `success`, `failure` or `release`.
   */
  tryAcquire(): boolean {
    const state = this.state;
    if (state === 'healthy') return true;
    if (state === 'open' || this.probesInFlight >= this.options.probes) return false;
    this.probesInFlight += 1;
    this.circuit = CircuitState.HalfOpen;
    return true;
  }

  /** Ends the probe this request was, when the breaker is half-open: its outcome then decides the circuit. */
  private endProbe(): boolean {
    if (this.circuit !== CircuitState.HalfOpen) return false;
    this.probesInFlight = Math.max(0, this.probesInFlight - 1);
    return true;
  }

  /** The request got its first byte (or its whole answer): the deployment works. */
  success(): void {
    if (this.circuit === CircuitState.Isolated) return;
    if (this.endProbe()) {
      this.close();
      return;
    }
    this.consecutive.success();
    this.rate.success(this.circuit);
  }

  /** The request failed in a way that blames the deployment (retryable upstream failure). */
  failure(): void {
    if (this.circuit === CircuitState.Isolated) return;
    if (this.endProbe()) {
      this.open();
      return;
    }
    if (this.circuit !== CircuitState.Closed) return;
    // Both policies see every failure, so their windows stay in step.
    const tooMany = this.consecutive.failure();
    const tooFrequent = this.rate.failure(this.circuit);
    if (tooMany || tooFrequent) this.open();
  }

  /** The request ended without saying anything about the deployment (cancelled, a 4xx). */
  release(): void {
    if (this.circuit === CircuitState.HalfOpen) {
      this.probesInFlight = Math.max(0, this.probesInFlight - 1);
      // The probe said nothing: stay probing so the next request probes again.
      if (this.probesInFlight === 0) this.circuit = CircuitState.Open;
    }
  }

  /** An upstream rate limit asked for `ms` of quiet: take no request until then. */
  hold(ms: number): void {
    const until = this.clock() + ms;
    if (this.circuit === CircuitState.Isolated && until <= this.until) return;
    this.circuit = CircuitState.Isolated;
    this.until = until;
    this.probesInFlight = 0;
    this.schedule(ms, () => {
      // The hold ends into a closed breaker: the upstream said when to come back.
      if (this.circuit === CircuitState.Isolated && this.clock() >= this.until) this.close();
    });
    this.changed();
  }

  /** Stops the timer of an open wait (process shutdown). */
  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private open(): void {
    const wasOpen = this.circuit !== CircuitState.Closed;
    this.backoff = wasOpen && this.backoff ? this.backoff.next(undefined) : this.backoffFactory.next();
    const wait = this.backoff.duration;
    this.circuit = CircuitState.Open;
    this.until = this.clock() + wait;
    this.probesInFlight = 0;
    // The state reads 'probing' by itself when the wait passes; the timer only tells listeners.
    this.schedule(wait, () => this.changed());
    this.changed();
  }

  private close(): void {
    this.circuit = CircuitState.Closed;
    this.backoff = undefined;
    this.until = 0;
    this.probesInFlight = 0;
    this.consecutive.success();
    this.rate.success(CircuitState.HalfOpen);
    this.dispose();
    this.changed();
  }

  private schedule(ms: number, action: () => void): void {
    this.dispose();
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        action();
      },
      Math.max(0, ms),
    );
    this.timer.unref();
  }

  private changed(): void {
    this.listener?.();
  }
}
