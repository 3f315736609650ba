/**
 * Connections that go away under load: dozens of calls always in flight (whole and streamed, on
 * call streams and unary) while the server's connections reach their age every few hundred ms, and
 * while replicas shut down one after another. Not one call may fail: a connection asked to go away
 * carries what it has until it ends, and the call streams move to new connections on their own.
 *
 * Keepalive pings come every 100 ms on both sides here, as they come (every 15 s and 30 s) within
 * the life of a closing connection in production, whose call streams move at their age (about
 * 30 s) and whose longest calls last minutes: a ping on a closing connection used to fail and take
 * every call on it down.
 */
import { describe, expect, it } from 'vitest';
import type { ExecuteResponse, ExecuteStreamEvent, ExecutorServiceClient } from '@gateway/proto';
import { eventually, freePort, startDnsServer } from '@gateway/testing';
import type * as grpc from '@grpc/grpc-js';
import { REFRESH_OPTION } from './address-resolver.js';
import { callUnary, createClient, withoutCallerStack } from './client.js';
import { createGatewayServer } from './server.js';
import { executorService, type Methods, sleep, type Streams, useCleanups } from './testing/executor-calls.js';
import { serveStreamedCalls, StreamedCalls } from './streamed-calls.js';

/** Most calls take a few ms; one in ten takes a few hundred, so that keepalive pings come while it runs. */
const callTime = () => (Math.random() < 0.1 ? 200 + Math.random() * 200 : 1 + Math.random() * 15);
const KEEPALIVE = { 'grpc.keepalive_time_ms': 100 };
/** Events of each streamed call, a few ms apart. */
const EVENTS = 3;
/** Callers, each with one call in flight at any time. */
const CALLERS = 48;

const cleanups = useCleanups();

/** A replica whose calls answer after a few ms (some after a few hundred), recording the connections (caller's address and port) they came on. */
async function startReplica(address: string, options: grpc.ServerOptions = {}) {
  const connections = new Set<string>();
  let answered = 0;
  const complete = async (): Promise<ExecuteResponse> => {
    await sleep(callTime());
    answered += 1;
    return { provider: 'test', model_id: 'm' };
  };
  const stream = async (_request: unknown, context: { send(event: ExecuteStreamEvent): Promise<void> }): Promise<ExecuteStreamEvent> => {
    for (let index = 0; index < EVENTS - 1; index += 1) {
      await sleep(callTime() / 2);
      await context.send({ rendered: { chunks: [{ json: 'x' }], text: 'x' } });
    }
    answered += 1;
    return { end: {} } as ExecuteStreamEvent;
  };
  const service = serveStreamedCalls({ complete }, 'CompleteCalls', undefined, { stream: stream as never });
  const server = createGatewayServer(
    [
      {
        name: 'gateway.executor.v1.ExecutorService',
        definition: executorService.service,
        handlers: {
          Complete: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<ExecuteResponse>) => {
            connections.add(call.getPeer());
            void complete().then((response) => callback(null, response));
          },
          StreamComplete: async (call: grpc.ServerWritableStream<unknown, ExecuteStreamEvent>) => {
            connections.add(call.getPeer());
            for (let index = 0; index < EVENTS; index += 1) {
              await sleep(callTime() / 2);
              call.write({ rendered: { chunks: [{ json: 'x' }], text: 'x' } });
            }
            answered += 1;
            call.end();
          },
          CompleteCalls: (call: Parameters<typeof service.handler>[0]) => {
            connections.add(call.getPeer());
            service.handler(call);
          },
        } as never,
        drain: service.drain,
      },
    ],
    { ...KEEPALIVE, ...options },
  );
  const port = await server.listen(address);
  let stopped = false;
  const shutdown = async (graceMs: number) => {
    if (stopped) return;
    stopped = true;
    await server.shutdown(graceMs);
  };
  cleanups.push(() => shutdown(100));
  return { port, connections, answered: () => answered, shutdown };
}

/** A client of the target: its call streams (replaced at `maxStreamAgeMs`) and its channel. */
function connect(target: string, maxStreamAgeMs: number, channel: grpc.ChannelOptions = {}) {
  const client: ExecutorServiceClient = createClient(executorService, target, { ...KEEPALIVE, ...channel });
  const calls = new StreamedCalls<Methods, Streams>({
    open: () => client.CompleteCalls(),
    streams: 4,
    target,
    cancellable: true,
    maxStreamAgeMs,
    unary: { complete: (request, options) => callUnary(client, client.Complete, request, options) },
  });
  cleanups.push(async () => {
    await calls.close(500);
    client.close();
  });
  return { client, calls };
}

/** A server-streaming StreamComplete read to its end. */
function streamUnary(client: ExecutorServiceClient): Promise<number> {
  return new Promise((resolve, reject) => {
    let events = 0;
    const call = withoutCallerStack(() => client.StreamComplete({ request_id: 'r' }, { deadline: Date.now() + 10_000 }));
    call.on('data', () => {
      events += 1;
    });
    call.on('error', reject);
    call.on('end', () => resolve(events));
  });
}

/**
 * Keeps CALLERS calls in flight, all started at once (the first ones find no stream open yet),
 * until `stop` is called: each caller in turn makes a whole call on the streams, a streamed call
 * on the streams, a unary call and a server-streaming call. Resolves with what was answered and
 * every failure.
 */
function drive(client: ExecutorServiceClient, calls: StreamedCalls<Methods, Streams>) {
  let stopping = false;
  let answered = 0;
  const failures: string[] = [];
  const caller = async (index: number) => {
    for (let turn = index; !stopping; turn += 1) {
      try {
        switch (turn % 4) {
          case 0:
            await calls.call('complete', { request_id: 'r' }, { deadlineMs: 10_000 });
            break;
          case 1: {
            const events = calls.stream('stream', { request_id: 'r' }, { deadlineMs: 10_000, window: 1 });
            let received = 0;
            if (events) for await (const _event of events) received += 1;
            else received = await streamUnary(client);
            if (received !== EVENTS) failures.push(`a streamed call got ${received} events`);
            break;
          }
          case 2:
            await callUnary(client, client.Complete, { request_id: 'r' }, { deadlineMs: 10_000 });
            break;
          default:
            if ((await streamUnary(client)) !== EVENTS) failures.push('a server-streaming call missed events');
        }
        answered += 1;
      } catch (error) {
        failures.push(`${['whole on a stream', 'streamed on a stream', 'unary', 'server-streaming'][turn % 4]}: ${(error as Error).message}`);
      }
    }
  };
  const done = Promise.all(Array.from({ length: CALLERS }, (_, index) => caller(index)));
  return {
    answered: () => answered,
    stop: async () => {
      stopping = true;
      await done;
      return { answered, failures };
    },
  };
}

describe('connections that go away under load', () => {
  it('fail no call across more than ten connection ages, whole and streamed', async () => {
    // Connections of about 300 ms; call streams replaced at about 450 ms, so that many of them
    // outlive the connection they were opened on, as they do in production.
    const replica = await startReplica('127.0.0.1:0', { 'grpc.max_connection_age_ms': 300, 'grpc.max_connection_age_grace_ms': 30_000 });
    const { client, calls } = connect(`127.0.0.1:${replica.port}`, 450);
    const load = drive(client, calls);
    await eventually(() => replica.connections.size >= 12, 'the client to have been moved to a 12th connection', 60_000, 20);
    const { answered, failures } = await load.stop();
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(CALLERS * 4);
  }, 90_000);

  it('fail no call while replicas shut down one after another, whole and streamed', async () => {
    const dns = await startDnsServer();
    cleanups.push(() => dns.stop());
    // Replicas of one name, all on one port, as the pods behind a headless Service.
    const port = await freePort();
    const replicas = new Map<string, Awaited<ReturnType<typeof startReplica>>>();
    for (const host of ['127.0.0.2', '127.0.0.3']) replicas.set(host, await startReplica(`${host}:${port}`));
    dns.set('executors.gateway.test', [...replicas.keys()]);
    const target = dns.target('executors.gateway.test', port);
    const { client, calls } = connect(target, 60_000, { [REFRESH_OPTION]: 200 });
    const load = drive(client, calls);
    // Each turn: a new replica joins the name and takes calls, then the oldest shuts down (its
    // connections asked to go away, its call streams drained) and leaves the name.
    for (const host of ['127.0.0.4', '127.0.0.5', '127.0.0.6']) {
      const joining = await startReplica(`${host}:${port}`);
      replicas.set(host, joining);
      dns.set('executors.gateway.test', [...replicas.keys()]);
      await eventually(() => joining.answered() >= 50, `the replica at ${host} to answer calls`, 30_000, 20);
      const [oldest, leaving] = [...replicas][0]!;
      const answeredBefore = load.answered();
      await leaving.shutdown(10_000);
      replicas.delete(oldest);
      dns.set('executors.gateway.test', [...replicas.keys()]);
      await eventually(() => load.answered() >= answeredBefore + 100, 'calls to be answered after a shutdown', 30_000, 20);
    }
    const { answered, failures } = await load.stop();
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(CALLERS * 4);
  }, 120_000);
});
