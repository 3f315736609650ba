/**
 * An executor replica lost before it answered anything is replaced by another: the whole-response
 * path retries the call, the SSE relay reopens the stream.
 */
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

/** Runs a whole-response call, moving to another replica when one is lost before answering. */
export async function withReplicaRetry<Result>(signal: AbortSignal, run: () => Promise<Result>): Promise<Result> {
  for (let replicaTry = 0; ; replicaTry += 1) {
    try {
      return await run();
    } catch (error) {
      if (replicaTry >= REPLICA_RETRIES || signal.aborted || !isReplicaLoss(error)) throw error;
    }
  }
}
