/**
 * The executor's gRPC calls as the edge makes them, for tests: a whole completion, a stream read to
 * its end or its error, each with a 10 s deadline, failures as GatewayError.
 */
import { GatewayError, Metadata } from '@gateway/grpc';
import type { ExecuteRequest, ExecuteResponseOutput, ExecuteStreamEventOutput, ExecutorServiceClient } from '@gateway/proto';

/** Complete on `client`; aborting `signal` cancels the call. */
export function completeOn(client: ExecutorServiceClient, request: ExecuteRequest, signal?: AbortSignal): Promise<ExecuteResponseOutput> {
  return new Promise((resolve, reject) => {
    const call = client.Complete(request, new Metadata(), { deadline: Date.now() + 10_000 }, (error, response) =>
      error ? reject(GatewayError.fromServiceError(error)) : resolve(response as ExecuteResponseOutput),
    );
    signal?.addEventListener('abort', () => call.cancel(), { once: true });
  });
}

/** The failure a call ended with, or undefined when it succeeded. */
export function failureOf(promise: Promise<unknown>): Promise<GatewayError | undefined> {
  return promise.then(
    () => undefined,
    (error: unknown) => error as GatewayError,
  );
}

/** StreamComplete on `client`: every event, and the error the stream ended with, if any. */
export function streamCompleteOn(
  client: ExecutorServiceClient,
  request: ExecuteRequest,
): Promise<{ events: ExecuteStreamEventOutput[]; error?: GatewayError }> {
  return new Promise((resolve) => {
    const events: ExecuteStreamEventOutput[] = [];
    const call = client.StreamComplete(request, new Metadata(), { deadline: Date.now() + 10_000 });
    call.on('data', (event: ExecuteStreamEventOutput) => events.push(event));
    call.on('error', (error) => resolve({ events, error: GatewayError.fromServiceError(error) }));
    call.on('end', () => resolve({ events }));
  });
}
