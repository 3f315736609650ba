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
 * What a log line may say of an unexpected error: its kind, message, code and stack, never its
 * other properties (a Redis reply error carries the command's arguments, a gRPC error its
 * metadata), so that nothing secret reaches a log. A rejection with something other than an Error
 * is described by its type only.
 */
export function describeFailure(failure: unknown): Record<string, unknown> {
  if (!(failure instanceof Error)) return { type: typeof failure };
  const code = (failure as { code?: unknown }).code;
  return {
    type: failure.name,
    message: failure.message,
    ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
    ...(failure.stack ? { stack: failure.stack } : {}),
    ...(failure.cause !== undefined ? { cause: describeFailure(failure.cause) } : {}),
  };
}

/**
 * Runs `stop` once, on the first SIGTERM or SIGINT, then exits: 0 when it finished, 1 when it
 * threw or outlasted `deadlineMs` (the orchestrator's grace period must be longer). Every service's
 * main.ts ends with this; `stop` reports not-ready first and closes what main opened.
 *
 * An error thrown outside any promise (uncaughtException) or a rejection nobody handled
 * (unhandledRejection) stops the process the same way, deliberately and with exit code 1, after
 * logging it with its cause: the part of the service it came from may be dead (a consumer loop, a
 * client's pipeline), and a process that keeps answering probes while broken is worse than one the
 * orchestrator restarts. In-flight work still gets the same grace as on SIGTERM.
 */
export function onShutdownSignal(logger: ShutdownLogger, deadlineMs: number, stop: (signal: string) => Promise<void>): ShutdownSignal {
  const state = { shuttingDown: false };
  const run = (signal: string, exitCode: 0 | 1) => {
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
        logger.info({ exit_code: exitCode }, 'stopped');
        process.exit(exitCode);
      },
      (error: unknown) => {
        logger.error({ err: describeFailure(error) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => run('SIGTERM', 0));
  process.once('SIGINT', () => run('SIGINT', 0));
  process.on('uncaughtException', (error: unknown) => {
    logger.error({ err: describeFailure(error) }, 'uncaught exception; the process stops and exits 1');
    run('uncaughtException', 1);
  });
  process.on('unhandledRejection', (reason: unknown) => {
    logger.error({ err: describeFailure(reason) }, 'unhandled promise rejection; the process stops and exits 1');
    run('unhandledRejection', 1);
  });
  return state;
}
