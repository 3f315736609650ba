/**
 * One pending timeout at a time, for a retry or a debounce: scheduling while one is pending does
 * nothing, the callback runs once, and the timer never holds the process open.
 */
export class SingleTimeout {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly onTimeout: () => void) {}

  /** True from `schedule` until the callback runs or `cancel`. */
  get pending(): boolean {
    return this.timer !== undefined;
  }

  /** Runs the callback after `delayMs`, unless a run is already pending. */
  schedule(delayMs: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.onTimeout();
    }, delayMs);
    this.timer.unref();
  }

  /** Drops the pending run, if any. */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
