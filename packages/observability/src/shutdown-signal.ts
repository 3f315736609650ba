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

/** How a service stops on SIGTERM: the settings of its config the shutdown reads. */
export interface ShutdownOptions {
  /**
   * How long in-flight work gets to finish once the service stops accepting (its
   * `<SERVICE>_SHUTDOWN_GRACE_MS`): the budget its stop steps drain within.
   */
  readonly graceMs: number;
  /**
   * How long the process keeps serving after the signal, reporting not-ready, before its first stop
   * step (its `<SERVICE>_SHUTDOWN_DELAY_MS`; 0 when absent): the time an orchestrator's endpoint
   * removal takes to reach every load balancer and client, so that none sends a request to a
   * process that no longer accepts. The process waits itself, so it needs no shell or preStop hook.
   */
  readonly delayMs?: number;
}

/**
 * The time a process takes, beyond its delay and grace, to close what is left (NATS, Redis, the
 * metrics server) and exit. A pod's terminationGracePeriodSeconds must cover delay + grace + this
 * (scripts/check-manifests.mjs checks every Deployment).
 */
export const SHUTDOWN_CLOSE_MARGIN_MS = 5_000;

/** One step of a shutdown: closes what one part of the service opened. */
export type StopStep = (signal: string) => Promise<unknown> | unknown;

/**
 * The shutdown of a process, there from its first line on: readiness reads `shuttingDown`, and each
 * resource registers its close as it is opened, so that no start-up path reaches a shutdown that
 * does not exist yet and a signal during start-up closes what was opened so far.
 */
export interface ServiceLifecycle extends ShutdownSignal {
  /**
   * Adds a stop step. Steps run one after the other, the last added first (what was opened last
   * closes first: it may use what was opened before it), after the delay; a step that throws is
   * logged, the others still run, and the process exits 1.
   */
  onStop(step: StopStep): void;
  /**
   * Runs `listener` at once on the signal, before the delay: for a not-ready report that is not
   * read from `shuttingDown` (a gRPC server's grpc.health.v1 status).
   */
  onSignal(listener: (signal: string) => void): void;
  /**
   * Stops the process as a signal would, but with exit code 1 whatever the stop steps do: for a
   * start-up that failed, so that what was opened so far is closed before the process exits.
   */
  abort(reason: string): void;
}

/**
 * Starts the shutdown of a process (once, before anything it closes is opened): on the first
 * SIGTERM or SIGINT, `shuttingDown` turns true and the onSignal listeners run; the process keeps
 * serving for `delayMs`, then runs its stop steps and exits: 0 when they finished, 1 when one threw
 * or they outlasted delay + grace + SHUTDOWN_CLOSE_MARGIN_MS (the orchestrator's grace period must
 * be longer).
 *
 * An error thrown outside any promise (uncaughtException) or a rejection nobody handled
 * (unhandledRejection) stops the process the same way, deliberately and with exit code 1, after
 * logging it with its cause: the part of the service it came from may be dead (a consumer loop, a
 * client's pipeline), and a process that keeps answering probes while broken is worse than one the
 * orchestrator restarts. In-flight work still gets the same grace as on SIGTERM.
 */
export function startLifecycle(logger: ShutdownLogger, options: ShutdownOptions): ServiceLifecycle {
  const delayMs = options.delayMs ?? 0;
  const deadlineMs = delayMs + options.graceMs + SHUTDOWN_CLOSE_MARGIN_MS;
  const steps: StopStep[] = [];
  const listeners: Array<(signal: string) => void> = [];
  let shuttingDown = false;
  const stop = async (signal: string): Promise<boolean> => {
    if (delayMs > 0) {
      logger.info({ delay_ms: delayMs }, 'not ready; serving on until the delay ends');
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
    let failed = false;
    while (steps.length > 0) {
      const step = steps.pop()!;
      try {
        await step(signal);
      } catch (error) {
        failed = true;
        logger.error({ err: describeFailure(error) }, 'shutdown step failed');
      }
    }
    return !failed;
  };
  const run = (signal: string, exitCode: 0 | 1) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ deadline_ms: deadlineMs }, 'shutdown took too long; exiting');
      process.exit(1);
    }, deadlineMs);
    timer.unref();
    for (const listener of listeners) {
      try {
        listener(signal);
      } catch (error) {
        logger.error({ err: describeFailure(error) }, 'shutdown listener failed');
      }
    }
    void stop(signal).then((finished) => {
      const code = finished ? exitCode : 1;
      logger.info({ exit_code: code }, 'stopped');
      process.exit(code);
    });
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
  return {
    get shuttingDown() {
      return shuttingDown;
    },
    onStop: (step) => {
      steps.push(step);
    },
    onSignal: (listener) => {
      listeners.push(listener);
    },
    abort: (reason) => run(reason, 1),
  };
}
