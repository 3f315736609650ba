/**
 * The edge app as its route tests build it: the real app through fastify's inject(), the peers a
 * test names faked through their own client interfaces, and every other required peer refusing to
 * be touched, so a route that calls a peer it should not fails its test.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { GatewayError, type Metadata } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import { buildEdgeApp } from '../app.js';
import { readEdgeConfig } from '../config.js';
import type { EdgeDependencies } from '../dependencies.js';

/** A call a fake gRPC client received. */
export interface ReceivedCall {
  method: string;
  request: Record<string, unknown>;
  metadata: Metadata;
}

type UnaryCallback = (error: Error | null, response?: unknown) => void;

/**
 * A grpc-js client whose unary methods (`(request, metadata, options, callback)`, as callUnary
 * invokes them) answer asynchronously with `answers[method]`, or, for a function, with what it
 * returns for the request at that moment. An Error answer fails the call; a GatewayError fails it
 * as a service's own error arrives, through its status and details. `onCall` sees every call first.
 */
export function fakeGrpcClient<Client>(answers: Record<string, unknown>, onCall: (call: ReceivedCall) => void = () => {}): Client {
  const unary = (method: string, answer: unknown) => (request: Record<string, unknown>, metadata: Metadata, _options: unknown, callback: UnaryCallback) => {
    onCall({ method, request, metadata });
    setImmediate(() => {
      const response = typeof answer === 'function' ? answer(request) : answer;
      if (response instanceof GatewayError) callback(Object.assign(new Error(response.message), response.toServiceError()));
      else if (response instanceof Error) callback(response);
      else callback(null, response);
    });
    return { cancel() {} };
  };
  return Object.fromEntries(Object.entries(answers).map(([method, answer]) => [method, unary(method, answer)])) as Client;
}

/** A dependency a test never uses: touching any of its members fails the test. */
export function unused<T>(name: string): T {
  return new Proxy({}, { get: (_target, member) => expect.fail(`the edge used ${name}.${String(member)}`) }) as T;
}

/** The required peers, each `unused` until a test names it. */
function untouchedPeers(): Omit<EdgeDependencies, 'config' | 'logger' | 'registry' | 'ready'> {
  return {
    auth: unused('auth'),
    adminAccess: unused('adminAccess'),
    teams: unused('teams'),
    decisions: unused('decisions'),
    router: unused('router'),
    executor: unused('executor'),
    completions: unused('completions'),
    catalog: unused('catalog'),
    usage: unused('usage'),
    metering: unused('metering'),
    responseStore: unused('responseStore'),
  };
}

/** The edge app, ready, with the config `env` makes and `peers` (the others untouched; the optional ones absent). */
export async function testEdge(env: Record<string, string>, peers: Partial<EdgeDependencies>): Promise<FastifyInstance> {
  const app = await buildEdgeApp({
    config: readEdgeConfig(env),
    logger: createLogger('edge', 'silent'),
    registry: new prometheus.Registry(),
    ready: async () => true,
    ...untouchedPeers(),
    ...peers,
  });
  await app.ready();
  return app;
}

/** A call a fake client recorded: its method and request. */
export type RecordedCall = Pick<ReceivedCall, 'method' | 'request'>;

/**
 * A test file's edge (testEdge with `env`), built before its tests and closed after them, with the
 * peers `peers` makes, given what records their calls. `received` holds the calls recorded, in
 * order, and is emptied before each test; `app()` is the edge once built.
 */
export function recordingEdge(
  env: Record<string, string>,
  peers: (record: (call: ReceivedCall) => void) => Partial<EdgeDependencies>,
): { app: () => FastifyInstance; received: RecordedCall[] } {
  const received: RecordedCall[] = [];
  let app: FastifyInstance | undefined;
  beforeAll(async () => {
    app = await testEdge(
      env,
      peers(({ method, request }) => received.push({ method, request })),
    );
  });
  afterAll(async () => {
    await app?.close();
  });
  beforeEach(() => {
    received.length = 0;
  });
  return { app: () => app ?? expect.fail('the edge is built before the tests'), received };
}

/**
 * A request to `app` with `credential` as its bearer token, or `{ authorization }` as that header
 * as it is (none when empty); `body` goes as JSON, a string as it is.
 */
export function injectAs(
  app: FastifyInstance,
  credential: string | { authorization: string },
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  body?: unknown,
): Promise<LightMyRequestResponse> {
  const authorization = typeof credential === 'string' ? `Bearer ${credential}` : credential.authorization;
  const headers: Record<string, string> = authorization ? { authorization } : {};
  if (body === undefined) return app.inject({ method, url, headers });
  headers['content-type'] = 'application/json';
  return app.inject({ method, url, headers, payload: typeof body === 'string' ? body : JSON.stringify(body) });
}
