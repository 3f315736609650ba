/**
 * An executor replica lost before it answered anything is replaced by another: the whole-response
 * path retries the call, the SSE relay reopens the stream.
 */
import { ConstantBackoff, handleType, handleWhen, retry } from 'cockatiel';
import { GatewayError, GrpcStatus } from '@gateway/grpc';

/** How many times a request moves to another executor replica after losing one. */
export const REPLICA_RETRIES = 2;

/**
 * Whether a failure is an executor replica lost before it answered anything: a transport-level
 * UNAVAILABLE with no ErrorInfo trailer (killed, refused the connection, went away). Such a call
 * is safe to send to another replica; a status with a trailer (the executor decided: upstream
 * errors, model_unavailable) is not, as it already retried and fell back itself.
 */
export function isReplicaLoss(error: unknown): boolean {
  const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
  return failure.code === GrpcStatus.UNAVAILABLE && failure.reason === 'service_unavailable';
}

/** The replica retries: at once (another replica answers), at most REPLICA_RETRIES, never once the caller left. */
export const replicaRetries = retry(handleWhen(isReplicaLoss), { maxAttempts: REPLICA_RETRIES, backoff: new ConstantBackoff(0) });

/** Runs a whole-response call, moving to another replica when one is lost before answering. */
export function withReplicaRetry<Result>(signal: AbortSignal, run: () => Promise<Result>): Promise<Result> {
  return replicaRetries.execute(run, signal);
}

/** A stream's replica lost before its first event (a try the SSE relay may make again elsewhere). */
export class ReplicaLost extends Error {
  constructor(readonly failure: unknown) {
    super('executor replica lost before the stream began');
    this.name = 'ReplicaLost';
  }
}

/** The SSE relay's replica retries: as replicaRetries, for a stream that lost its replica before any event. */
export const streamReplicaRetries = retry(handleType(ReplicaLost), { maxAttempts: REPLICA_RETRIES, backoff: new ConstantBackoff(0) });
