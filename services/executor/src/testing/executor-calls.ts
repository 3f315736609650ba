/**
 * The executor's gRPC calls as the edge makes them, for tests: a whole completion, a stream read to
 * its end or its error, each with a 10 s deadline, failures as GatewayError; and the executor's
 * server started for them.
 */
import { afterEach } from 'vitest';
import type { CatalogModel } from '@gateway/catalog';
import { createClient, createGatewayServer, GatewayError, Metadata, type GatewayServer } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import { loadGatewayGrpc, type ExecuteRequest, type ExecuteResponseOutput, type ExecuteStreamEventOutput, type ExecutorServiceClient } from '@gateway/proto';
import { createServer, DEFAULT_BREAKER, DEFAULT_RETRY, EXECUTOR_SERVICE_NAME, type ExecutorDependencies } from '../app.js';
import { createExecutorMetrics } from '../executor-metrics.js';
import { createExecutorHandlers } from '../executor-service.js';
import { DeploymentPool } from '../pool/deployment-pool.js';
import type { Provider } from '../providers/provider.js';

/** What a test's executor is built from: a silent logger, and a registry of its own unless given. */
export type TestExecutorDependencies = Omit<ExecutorDependencies, 'logger' | 'registry'> & { readonly registry?: prometheus.Registry };

/** Starts the executor's server on a free local port; returns it and a client of it. */
export async function startExecutor(dependencies: TestExecutorDependencies): Promise<{ server: GatewayServer; client: ExecutorServiceClient }> {
  const server = createServer({ logger: createLogger('executor-test', 'silent'), registry: new prometheus.Registry(), ...dependencies });
  const port = await server.listen('127.0.0.1:0');
  return { server, client: createClient(loadGatewayGrpc().gateway.executor.v1.ExecutorService, `127.0.0.1:${port}`) };
}

/**
 * The executor's handlers alone (no provider registry, no pools), with every model of `models`
 * served by a provider of the test's own: returns the function that starts them for a provider
 * on a free local port and gives a client of them. Whatever it started is closed after each test.
 */
export function useExecutorOfProvider(models: readonly CatalogModel[]): (provider: Provider) => Promise<ExecutorServiceClient> {
  const started: Array<{ server: GatewayServer; client: ExecutorServiceClient }> = [];
  afterEach(async () => {
    for (const { server, client } of started.splice(0)) {
      client.close();
      await server.shutdown(100);
    }
  });
  return async (provider) => {
    const service = createExecutorHandlers({
      pool: new DeploymentPool([...models], {}, DEFAULT_BREAKER),
      providers: { forModel: () => provider },
      retry: DEFAULT_RETRY,
      logger: createLogger('executor-test', 'silent'),
      metrics: createExecutorMetrics(new prometheus.Registry()),
    });
    const definition = loadGatewayGrpc().gateway.executor.v1.ExecutorService;
    const server = createGatewayServer([{ name: EXECUTOR_SERVICE_NAME, definition: definition.service, handlers: service.handlers, drain: service.drain }]);
    const port = await server.listen('127.0.0.1:0');
    const client = createClient(definition, `127.0.0.1:${port}`);
    started.push({ server, client });
    return client;
  };
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
