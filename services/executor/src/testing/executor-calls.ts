/**
 * The executor's gRPC calls as the edge makes them, for tests: a whole completion, a stream read to
 * its end or its error, each with a 10 s deadline, failures as GatewayError; and the executor's
 * server started for them.
 */
import { createClient, GatewayError, Metadata, type GatewayServer } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import { loadGatewayGrpc, type ExecuteRequest, type ExecuteResponseOutput, type ExecuteStreamEventOutput, type ExecutorServiceClient } from '@gateway/proto';
import { createServer, type ExecutorDependencies } from '../app.js';

/** What a test's executor is built from: a silent logger, and a registry of its own unless given. */
export type TestExecutorDependencies = Omit<ExecutorDependencies, 'logger' | 'registry'> & { readonly registry?: prometheus.Registry };

/** Starts the executor's server on a free local port; returns it and a client of it. */
export async function startExecutor(dependencies: TestExecutorDependencies): Promise<{ server: GatewayServer; client: ExecutorServiceClient }> {
  const server = createServer({ logger: createLogger('executor-test', 'silent'), registry: new prometheus.Registry(), ...dependencies });
  const port = await server.listen('127.0.0.1:0');
  return { server, client: createClient(loadGatewayGrpc().gateway.executor.v1.ExecutorService, `127.0.0.1:${port}`) };
}

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
