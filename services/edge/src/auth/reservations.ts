/**
 * A request's token reservation, held from auth's decision until the request ends: handed to its
 * usage event (metering settles it in the step that meters the event), or settled with 0 through
 * auth when the request produced nothing.
 */
import type { FastifyRequest } from 'fastify';
import { handleWhen, IterableBackoff, retry } from 'cockatiel';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { CheckKeyResponseOutput, SettleUsageRequest } from '@gateway/proto';
import type { EdgeDependencies } from '../dependencies.js';

/** A request's reservation: settled once, with the tokens it actually used. */
export interface Reservation {
  /** Settles with the actual tokens through auth; only the first settle or hand-off counts. */
  settle(actualTokens: number): void;
  /**
   * Hands the settlement to the request's usage event: returns the reservation id to put in it
   * (metering settles it with the event's usage, exactly once, in the step that meters it), or ''
   * when there is nothing to settle or it was settled already. No call to auth is made.
   */
  handOff(): string;
}

const reservations = new WeakMap<FastifyRequest, Reservation>();
const SETTLE_RETRY_DELAYS_MS = [250, 1_000, 3_000];

/**
 * Holds the reservation auth made for a request until the request ends. The paths that publish a
 * usage event hand the settlement to it (metering settles with the event's usage: no second call
 * to auth on the hot path, and a settlement that survives this edge stopping after the answer);
 * releaseReservation settles whatever is left with 0 through auth (a request that failed without
 * producing anything, so without a usage event). Settlement runs in the background with retries: it is
 * idempotent in auth, so a retry never charges twice, and a settlement that never lands leaves
 * the reservation charged, once, until it leaves the window.
 */
export function holdReservation(deps: EdgeDependencies, request: FastifyRequest, decision: CheckKeyResponseOutput): Reservation {
  const reservationId = decision.reservation_id ?? '';
  let settled = reservationId === '';
  const reservation: Reservation = {
    settle(actualTokens) {
      if (settled) return;
      settled = true;
      // After the current turn, so the response the caller waits for is written first.
      setImmediate(
        () => void settleWithRetries(deps, { reservation_id: reservationId, actual_tokens: Math.max(0, Math.round(actualTokens)), request_id: request.id }),
      );
    },
    handOff() {
      if (settled) return '';
      settled = true;
      return reservationId;
    },
  };
  reservations.set(request, reservation);
  return reservation;
}

/** Settles a request's reservation with 0 tokens unless a path already settled it with its usage. */
export function releaseReservation(request: FastifyRequest): void {
  reservations.get(request)?.settle(0);
}

/** Whether a settlement that failed may succeed if sent again: auth was away or late, not refusing. */
function settlementRetryable(error: unknown): boolean {
  const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
  return failure.code === GrpcStatus.UNAVAILABLE || failure.code === GrpcStatus.DEADLINE_EXCEEDED;
}

/** Settlement's retries: three more tries, 0.25, 1 and 3 s after a failure auth may recover from. */
const settlementRetries = retry(handleWhen(settlementRetryable), {
  maxAttempts: SETTLE_RETRY_DELAYS_MS.length,
  backoff: new IterableBackoff(SETTLE_RETRY_DELAYS_MS),
});

async function settleWithRetries(deps: EdgeDependencies, settlement: SettleUsageRequest): Promise<void> {
  const requestId = settlement.request_id ?? '';
  try {
    await settlementRetries.execute(() => deps.decisions.call('settle_usage', settlement, { deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId }));
  } catch (error) {
    const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
    deps.logger.warn({ request_id: requestId, reason: failure.reason }, 'usage not settled; the reservation stays charged until it leaves the window');
  }
}
