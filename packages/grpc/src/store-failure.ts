/**
 * How a gRPC handler answers when the store behind it fails: a GatewayError passes as it is (the
 * handler's own refusal); any other failure is logged with its message only and answered as a
 * retryable error of the handler's reason, so that a caller may try again elsewhere or later.
 */
import type { ErrorReason } from './error-reasons.js';
import { GatewayError } from './gateway-error.js';

/** What a handler says when its store fails. */
export interface StoreFailure {
  /** The store's name in the log line: `team store` (logged as `team store unavailable`). */
  readonly name: string;
  /** The caller's answer: its reason (store_unavailable, auth_unavailable) and message. */
  readonly reason: ErrorReason;
  readonly message: string;
  /** The store's own refusals (invalid input) as the caller's answer; undefined for a failure. */
  readonly refusal?: (error: unknown) => GatewayError | undefined;
  /** Told of each failure (a counter of store errors). */
  readonly onFailure?: () => void;
}

/** The runner of a handler's store operations; see the module comment. */
export function storeCalls(logger: { error(details: object, message: string): void }, failure: StoreFailure): <T>(operation: () => Promise<T>) => Promise<T> {
  return async (operation) => {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      const refusal = failure.refusal?.(error);
      if (refusal) throw refusal;
      failure.onFailure?.();
      logger.error({ err: { message: (error as Error).message } }, `${failure.name} unavailable`);
      throw GatewayError.of(failure.reason, failure.message, { retryable: true, cause: error });
    }
  };
}
