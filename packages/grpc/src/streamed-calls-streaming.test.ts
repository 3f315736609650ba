/**
 * Streamed calls on StreamedCalls against real grpc-js servers on loopback, speaking
 * gateway.executor.v1.CompleteCalls with handlers of the test's own: events in order, credit that
 * holds a producer back while its consumer does not read, cancellation, failures after events,
 * replacement of a stream under a call, and servers that carry no streamed calls.
 */
import { describe, expect, it } from 'vitest';
import type {
  ExecuteRequest,
  ExecuteRequestOutput,
  ExecuteResponse,
  ExecuteStreamEvent,
  ExecuteStreamEventOutput,
  ExecutorServiceClient,
} from '@gateway/proto';
import { eventually } from '@gateway/testing';
import { callUnary, createClient } from './client.js';
import { GatewayError } from './gateway-error.js';
import { GrpcStatus } from './index.js';
import { createGatewayServer } from './server.js';
import { executorService, type Methods, sleep, type Streams, useCleanups } from './testing/executor-calls.js';
import { serveStreamedCalls, StreamedCalls, type StreamedCallsOptions, type StreamingCallContext } from './streamed-calls.js';

/** Produces a call's events; `request.request_id` tells it what to do. */
type StreamHandler = (request: ExecuteRequestOutput, context: StreamingCallContext<ExecuteStreamEvent>) => Promise<ExecuteStreamEvent>;

const event = (text: string): ExecuteStreamEvent => ({ rendered: { chunks: [{ json: text }], text } });
const textOf = (received: ExecuteStreamEventOutput) => received.rendered?.text ?? (received.end ? 'end' : received.failure ? 'failure' : '?');

const cleanups = useCleanups();

/** A server whose CompleteCalls carries `stream` (unless `streamed` is false) with the handler given. */
async function startServer(stream: StreamHandler, options: { streamed?: boolean } = {}) {
  const complete = async (): Promise<ExecuteResponse> => ({ provider: 'test', model_id: 'm' });
  const service = serveStreamedCalls({ complete }, 'CompleteCalls', undefined, options.streamed === false ? {} : { stream });
  const server = createGatewayServer([
    {
      name: 'gateway.executor.v1.ExecutorService',
      definition: executorService.service,
      handlers: { CompleteCalls: service.handler } as never,
      drain: service.drain,
    },
  ]);
  const port = await server.listen('127.0.0.1:0');
  cleanups.push(() => server.shutdown(100));
  return { port, service };
}

function connect(port: number, options: Partial<StreamedCallsOptions<Methods>> = {}) {
  const client: ExecutorServiceClient = createClient(executorService, `127.0.0.1:${port}`);
  const calls = new StreamedCalls<Methods, Streams>({
    open: () => client.CompleteCalls(),
    streams: 1,
    cancellable: true,
    unary: { complete: (request, callOptions) => callUnary(client, client.Complete, request, callOptions) },
    ...options,
  });
  cleanups.push(async () => {
    await calls.close(200);
    client.close();
  });
  return calls;
}

/** Polls every 5 ms until `condition` holds; fails naming `description` after timeoutMs. */
const until = (condition: () => boolean, description: string, timeoutMs?: number) => eventually(condition, description, timeoutMs, 5);

async function collect(events: AsyncIterable<ExecuteStreamEventOutput>): Promise<string[]> {
  const texts: string[] = [];
  for await (const received of events) texts.push(textOf(received));
  return texts;
}

const request = (id: string): ExecuteRequest => ({ request_id: id, model_id: 'm' });

describe('StreamedCalls: streamed calls', () => {
  it('delivers each call its own events in order, the last one included, while calls run side by side', async () => {
    const { port } = await startServer(async (call, context) => {
      for (let index = 0; index < 30; index += 1) {
        await context.send(event(`${call.request_id}-${index}`));
        if (index % 7 === 0) await sleep(1);
      }
      return { end: { provider: call.request_id ?? '' } };
    });
    const calls = connect(port);
    await until(() => calls.openStreams === 1, 'an open stream');
    const results = await Promise.all(['a', 'b', 'c'].map((id) => collect(calls.stream('stream', request(id), { deadlineMs: 5_000, window: 4 })!)));
    for (const [position, id] of ['a', 'b', 'c'].entries()) {
      expect(results[position]).toEqual([...Array.from({ length: 30 }, (_, index) => `${id}-${index}`), 'end']);
    }
  });

  it('holds a producer back at its window while its consumer does not read, and lets it on as the consumer reads', async () => {
    let sent = 0;
    const { port } = await startServer(async (_call, context) => {
      for (let index = 0; index < 100; index += 1) {
        await context.send(event(String(index)));
        sent += 1;
      }
      return { end: {} };
    });
    const calls = connect(port);
    await until(() => calls.openStreams === 1, 'an open stream');
    const events = calls.stream('stream', request('slow'), { deadlineMs: 10_000, window: 6 })!;
    // Nobody reads: the server sends its window and waits.
    await until(() => sent === 6, 'the window to be sent');
    await sleep(200);
    expect(sent).toBe(6);
    // Another call on the same stream is not held back by the stalled one.
    const other = await collect(calls.stream('stream', request('other'), { deadlineMs: 5_000, window: 0 })!);
    expect(other).toHaveLength(101);
    sent = 0;
    const texts = await collect(events);
    expect(texts).toEqual([...Array.from({ length: 100 }, (_, index) => String(index)), 'end']);
  });

  it('cancels the call on the server when the consumer leaves early, when its signal aborts, and at its deadline', async () => {
    const aborted: string[] = [];
    const { port } = await startServer(async (call, context) => {
      context.signal.addEventListener('abort', () => aborted.push(call.request_id ?? ''));
      for (let index = 0; !context.signal.aborted; index += 1) {
        await context.send(event(String(index)));
        await sleep(5);
      }
      return { end: {} };
    });
    const calls = connect(port);
    await until(() => calls.openStreams === 1, 'an open stream');

    for await (const received of calls.stream('stream', request('leaves'), { deadlineMs: 5_000, window: 4 })!) {
      if (textOf(received) === '2') break;
    }
    await until(() => aborted.includes('leaves'), 'the server to abort the call the consumer left');

    const controller = new AbortController();
    const signalled = calls.stream('stream', request('signalled'), { deadlineMs: 5_000, window: 4, signal: controller.signal })!;
    setTimeout(() => controller.abort(), 50);
    const cancelled = await collect(signalled).catch((error: unknown) => error);
    expect(cancelled).toBeInstanceOf(GatewayError);
    expect((cancelled as GatewayError).code).toBe(GrpcStatus.CANCELLED);
    await until(() => aborted.includes('signalled'), 'the server to abort the call whose signal aborted');

    const late = await collect(calls.stream('stream', request('late'), { deadlineMs: 100, window: 4 })!).catch((error: unknown) => error);
    expect((late as GatewayError).code).toBe(GrpcStatus.DEADLINE_EXCEEDED);
    await until(() => aborted.includes('late'), 'the server to abort the call past its deadline');
  });

  it("ends with the server's failure after the events it sent before failing", async () => {
    const { port } = await startServer(async (_call, context) => {
      await context.send(event('one'));
      await context.send({ failure: { provider: 'test' } });
      throw new GatewayError(GrpcStatus.UNAVAILABLE, 'upstream_error', 'The model stream broke.', { retryable: true });
    });
    const calls = connect(port);
    await until(() => calls.openStreams === 1, 'an open stream');
    const texts: string[] = [];
    let failure: unknown;
    try {
      for await (const received of calls.stream('stream', request('fails'), { deadlineMs: 5_000, window: 4 })!) texts.push(textOf(received));
    } catch (error) {
      failure = error;
    }
    expect(texts).toEqual(['one', 'failure']);
    expect(failure).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'upstream_error', message: 'The model stream broke.' });
  });

  it('a call in flight when its stream is replaced still gets its credit and finishes on it', async () => {
    const { port } = await startServer(async (_call, context) => {
      for (let index = 0; index < 40; index += 1) await context.send(event(String(index)));
      return { end: {} };
    });
    const calls = connect(port, { maxStreamAgeMs: 150 });
    await until(() => calls.openStreams === 1, 'an open stream');
    const events = calls.stream('stream', request('across'), { deadlineMs: 5_000, window: 2 })!;
    // The stream reaches its age (and is retired) while the call waits for credit.
    await sleep(400);
    expect(await collect(events)).toHaveLength(41);
  });

  it('is not sent to a server whose streams do not carry it: the caller makes the streaming RPC itself', async () => {
    const { port } = await startServer(async () => ({ end: {} }), { streamed: false });
    const paths: string[] = [];
    const calls = connect(port, { onCall: (method, path) => paths.push(`${method}:${path}`) });
    await until(() => calls.openStreams === 1, 'an open stream');
    expect(calls.stream('stream', request('none'), { deadlineMs: 5_000, window: 4 })).toBeUndefined();
    expect(await calls.call('complete', request('whole'), { deadlineMs: 5_000 })).toMatchObject({ model_id: 'm' });
    expect(paths).toEqual(['stream:unary', 'complete:stream']);
  });
});
