/** Minimal logger shape (pino's) so this package needs no logger of its own. */
interface ShutdownLogger {
  info(object: object, message: string): void;
  error(object: object, message: string): void;
}

/** The state of a process that may be shutting down. */
export interface ShutdownSignal {
  /** True from the first SIGTERM or SIGINT on: readiness probes report not ready. */
  readonly shuttingDown: boolean;
}

/**
 * Runs `stop` once, on the first SIGTERM or SIGINT, then exits: 0 when it finished, 1 when it
 * threw or outlasted `deadlineMs` (the orchestrator's grace period must be longer). Every service's
 * main.ts ends with this; `stop` reports not-ready first and closes what main opened.
 */
export function onShutdownSignal(logger: ShutdownLogger, deadlineMs: number, stop: (signal: string) => Promise<void>): ShutdownSignal {
  const state = { shuttingDown: false };
  const run = (signal: string) => {
    if (state.shuttingDown) return;
    state.shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ deadline_ms: deadlineMs }, 'shutdown took too long; exiting');
      process.exit(1);
    }, deadlineMs);
    timer.unref();
    stop(signal).then(
      () => {
        logger.info({}, 'stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => run('SIGTERM'));
  process.once('SIGINT', () => run('SIGINT'));
  return state;
}
