/**
 * The Responses WebSocket's own rules, on the edge app with its peers faked (app.test.ts's way)
 * and a ws client: the lifetime that waits for the running response and then
 * sends Codex's `websocket_connection_limit_reached` event, the bound on responses waiting on one
 * socket, the edge's shutdown letting a running response finish, and a closed socket cancelling its
 * running response and leaving nothing open (a real
 * socket on a local port: fastify's injected sockets never see the client's close). The
 * protocol end to end (auth, chaining, refusals, size and idle bounds) is
 * tests/e2e/responses-websocket.e2e.test.ts's.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import type { ExecuteStreamEventOutput } from '@gateway/proto';
import { eventually } from '@gateway/testing';
import { buildEdgeApp } from '../../app.js';
import type { CatalogView } from '../../catalog-view.js';
import { readEdgeConfig } from '../../config.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { allowDecision, testModel } from '../../testing/edge-fakes.js';

const KEY = `br-${'w'.repeat(40)}`;
const LIFETIME_MS = 300;

type Event = { type: string } & Record<string, unknown>;

let app: FastifyInstance;
let registry: prometheus.Registry;
/** Held streams wait for this; released by release(). */
let release: () => void;
let held: Promise<void>;
/** The abort signal of each stream the executor was asked for. */
let signals: AbortSignal[];

/** A chat chunk of the executor's stream. */
function chunk(content: string, finishes = false) {
  return {
    json: JSON.stringify({
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'plain',
      choices: [{ index: 0, delta: { content }, finish_reason: finishes ? 'stop' : null }],
    }),
    finishes,
  };
}

beforeEach(async () => {
  signals = [];
  held = new Promise((resolve) => {
    release = resolve;
  });
  registry = new prometheus.Registry();
  const models = [testModel('plain')];
  const catalog: CatalogView = { ready: true, get: (id) => models.find((entry) => entry.id === id), list: () => models };
  const deps = {
    config: readEdgeConfig({ EDGE_ADMIN_TOKEN: '', EDGE_WS_MAX_LIFETIME_MS: String(LIFETIME_MS) }),
    logger: createLogger('edge-test', 'silent'),
    registry,
    decisions: { call: async (method: string) => (method === 'check_key' ? allowDecision() : { outcome: 'SETTLE_OUTCOME_SETTLED' }) },
    completions: {
      stream: (_method: string, _request: unknown, options: { signal: AbortSignal }) => {
        signals.push(options.signal);
        return (async function* () {
          yield { start: { model_id: 'plain', provider: 'openai-compatible', attempts: [] }, rendered: { chunks: [chunk('Hel')], text: 'Hel' } };
          await Promise.race([held, new Promise((_resolve, reject) => options.signal.addEventListener('abort', () => reject(new Error('aborted'))))]);
          yield { rendered: { chunks: [chunk('lo', true)], text: 'lo' } };
          yield { end: { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }, provider: 'openai-compatible', model_id: 'plain', attempts: [] } };
        })() as AsyncIterable<ExecuteStreamEventOutput>;
      },
    },
    catalog,
    usage: { publish: () => undefined },
    ready: async () => true,
  } as unknown as EdgeDependencies;
  app = await buildEdgeApp(deps);
  await app.listen({ port: 0, host: '127.0.0.1' });
});

afterEach(async () => {
  release();
  if (app.server.listening) await app.close();
});

/** A socket on /v1/responses with the test key, and what it receives. */
async function open(): Promise<{ socket: WebSocket; received: Event[]; closed: Promise<number> }> {
  const { port } = app.server.address() as AddressInfo;
  const socket = new WebSocket(`ws://127.0.0.1:${port}/v1/responses`, { headers: { authorization: `Bearer ${KEY}` } });
  const received: Event[] = [];
  socket.on('message', (data) => received.push(JSON.parse(String(data)) as Event));
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  return { socket, received, closed };
}

const create = (input: string) => JSON.stringify({ type: 'response.create', model: 'plain', input });

async function openSockets(): Promise<number> {
  return (await registry.getSingleMetricAsString('gateway_responses_websockets_open'))
    .split('\n')
    .filter((line) => line.startsWith('gateway_responses_websockets_open '))
    .map((line) => Number(line.split(' ')[1]))[0]!;
}

/** The sockets closed so far for `reason`, as gateway_responses_websocket_duration_seconds counts them. */
async function closedFor(reason: string): Promise<number | undefined> {
  const line = (await registry.getSingleMetricAsString('gateway_responses_websocket_duration_seconds'))
    .split('\n')
    .find((candidate) => candidate.startsWith(`gateway_responses_websocket_duration_seconds_count{reason="${reason}"}`));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('a Responses WebSocket', () => {
  it('counts each socket closed by why, every reason from 0: its lifetime, the client, a connection dropped without a close frame', async () => {
    for (const reason of ['client', 'dropped', 'idle', 'lifetime', 'message_too_large', 'unresponsive', 'shutdown', 'terminated'])
      expect(await closedFor(reason)).toBe(0);
    const lived = await open();
    expect(await lived.closed).toBe(1000);
    await eventually(async () => (await closedFor('lifetime')) === 1 || undefined, 'the lifetime close to be counted', 5_000, 10);
    const closedByClient = await open();
    closedByClient.socket.close(1000);
    await closedByClient.closed;
    await eventually(async () => (await closedFor('client')) === 1 || undefined, "the client's close to be counted", 5_000, 10);
    const dropped = await open();
    dropped.socket.terminate();
    await eventually(async () => (await closedFor('dropped')) === 1 || undefined, 'the dropped connection to be counted', 5_000, 10);
    // The socket that lived its whole lifetime shows in the buckets as having lasted at least that long.
    const lifetime = await registry.getSingleMetricAsString('gateway_responses_websocket_duration_seconds');
    expect(lifetime).toContain('gateway_responses_websocket_duration_seconds_bucket{le="1",reason="lifetime"} 1');
    expect(Number(/gateway_responses_websocket_duration_seconds_sum\{reason="lifetime"\} (\S+)/.exec(lifetime)?.[1])).toBeGreaterThanOrEqual(
      LIFETIME_MS / 1000,
    );
    expect(await closedFor('shutdown')).toBe(0);
  });

  it("lets its running response finish past its lifetime, then sends Codex's limit event and closes", async () => {
    const { socket, received, closed } = await open();
    socket.send(create('Hello'));
    await eventually(() => received.some((event) => event.type === 'response.output_text.delta'), 'the first delta', 5_000, 10);
    await new Promise((resolve) => setTimeout(resolve, LIFETIME_MS + 100));
    expect(received.some((event) => event.type === 'error')).toBe(false);
    release();
    expect(await closed).toBe(1000);
    const types = received.map((event) => event.type);
    expect(types.slice(-2)).toEqual(['response.completed', 'error']);
    expect(received.at(-1)).toMatchObject({ error: { code: 'websocket_connection_limit_reached' } });
  });

  it('refuses more responses than may wait on one socket with a 429 error event', async () => {
    const { socket, received } = await open();
    for (let index = 0; index < 5; index += 1) socket.send(create(`Hello ${index}`));
    await eventually(() => received.some((event) => event.type === 'error'), 'the refusal', 5_000, 10);
    expect(received.filter((event) => event.type === 'error')).toEqual([
      expect.objectContaining({ status: 429, error: expect.objectContaining({ code: 'too_many_queued_responses' }) }),
    ]);
    release();
    await eventually(() => received.filter((event) => event.type === 'response.completed').length === 4, 'the 4 accepted responses', 5_000, 10);
    socket.close();
  });

  it('cancels its running response when the client closes it, and counts no socket open after', async () => {
    const { socket, received, closed } = await open();
    expect(await openSockets()).toBe(1);
    socket.send(create('Hello'));
    await eventually(() => received.some((event) => event.type === 'response.output_text.delta'), 'the first delta', 5_000, 10);
    socket.close();
    await closed;
    await eventually(() => signals[0]?.aborted === true, "the executor call's cancellation", 5_000, 10);
    await eventually(async () => (await openSockets()) === 0, 'no socket open', 5_000, 10);
  });

  it('finishes its running response when the edge shuts down, then closes (1001)', async () => {
    const { socket, received, closed } = await open();
    socket.send(create('Hello'));
    await eventually(() => received.some((event) => event.type === 'response.output_text.delta'), 'the first delta', 5_000, 10);
    const closing = app.close();
    setTimeout(() => release(), 100);
    expect(await closed).toBe(1001);
    await closing;
    expect(received.at(-1)).toMatchObject({ type: 'response.completed', response: { status: 'completed' } });
    expect(await closedFor('shutdown')).toBe(1);
  });
});
