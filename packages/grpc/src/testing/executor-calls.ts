/**
 * What the tests of streamed calls share: the ExecutorService they serve and call (its unary
 * `complete` and its `stream` of events), and clean-ups that undo each test's servers and clients.
 */
import { type ExecuteRequest, type ExecuteResponseOutput, type ExecuteStreamEventOutput, loadGatewayGrpc } from '@gateway/proto';
import { afterEach } from 'vitest';

/** The unary calls a test makes on CompleteCalls. */
export type Methods = { complete: [ExecuteRequest, ExecuteResponseOutput] };
/** The streamed calls a test makes on CompleteCalls. */
export type Streams = { stream: [ExecuteRequest, ExecuteStreamEventOutput] };

/** The service definition of gateway.executor.v1.ExecutorService. */
export const executorService = loadGatewayGrpc().gateway.executor.v1.ExecutorService;

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, ms));

/** Registers clean-ups that run after each test, the last registered first. */
export function useCleanups(): Array<() => Promise<void> | void> {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return cleanups;
}
