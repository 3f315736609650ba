/**
 * A reading of metering's state taken now and again every interval until stopped: the lag gauges
 * and the usage stream's use both read JetStream this way. Each next reading is scheduled once the
 * last one settles, so a slow JetStream never has two readings of the same thing in flight, and the
 * timer never holds the process open.
 */
export interface RepeatedReading<Reading> {
  /** Reads once now, then every interval until stopped; a second start does nothing. */
  start(): Promise<void>;
  stop(): void;
  /** Reads once, outside the schedule. */
  poll(): Promise<Reading>;
}

/** Repeats `poll` every `intervalMs` between start and stop. */
export function repeatReading<Reading>(poll: () => Promise<Reading>, intervalMs: number): RepeatedReading<Reading> {
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  const schedule = () => {
    timer = setTimeout(() => {
      void poll().finally(() => {
        if (running) schedule();
      });
    }, intervalMs);
    timer.unref();
  };
  return {
    poll,
    start: async () => {
      if (running) return;
      running = true;
      await poll();
      if (running) schedule();
    },
    stop: () => {
      running = false;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}

/** A warning logged at most once per interval (a dependency down for minutes must not flood the log). */
export function throttled(intervalMs: number, now: () => number = Date.now): () => boolean {
  let lastAt = Number.NEGATIVE_INFINITY;
  return () => {
    if (now() - lastAt < intervalMs) return false;
    lastAt = now();
    return true;
  };
}
