/**
 * The retry of a start-up step that must succeed in the end, though Redis may come up after auth
 * does. Nothing stops it but success: auth's shutdown exits the process, which ends a retry still
 * waiting, so the policy needs no cancellation of its own.
 */
import { DelegateBackoff, handleAll, retry, type IRetryBackoffContext, type RetryPolicy } from 'cockatiel';
import type { Logger } from '@gateway/logger';

/** How a start-up step is retried. */
export interface StartUpRetryOptions {
  /** The pause after the first failure; each later pause is one step longer (linear, not doubling). */
  readonly stepMs: number;
  /** The longest pause. */
  readonly maxMs: number;
  /** The warning logged after each failure, with the error's message and the failed attempt's number (from 1). */
  readonly message: string;
}

/**
 * A cockatiel retry policy for a start-up step: any error is retried, forever, after a pause of
 * `stepMs` times the number of failures so far, at most `maxMs`, each failure logged as a warning
 * before its pause.
 */
export function startUpRetry(logger: Logger, options: StartUpRetryOptions): RetryPolicy {
  const policy = retry(handleAll, {
    maxAttempts: Number.POSITIVE_INFINITY,
    backoff: new DelegateBackoff<IRetryBackoffContext<unknown>>(({ attempt }) => Math.min(attempt * options.stepMs, options.maxMs)),
  });
  policy.onRetry((failure) => {
    if ('error' in failure) logger.warn({ err: { message: failure.error.message }, attempt: failure.attempt }, options.message);
  });
  return policy;
}
