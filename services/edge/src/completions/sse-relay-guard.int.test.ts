/**
 * Streams under output guardrails, through the edge's SSE relay and each API's real renderer, with
 * a real executor stream (a grpc-js ExecutorService streaming slowly) and a real guard (a grpc-js
 * GuardService holding back tails as the guard does). The completion's guard is built here from
 * the guard client, where the edge's pipeline attaches it after routing.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callUnary, createClient, createGatewayServer, type GatewayServer, type GatewayService } from '@gateway/grpc';
import {
  type CheckRequest,
  type CheckResponseOutput,
  type ExecuteStreamEvent,
  type ExecutorServiceClient,
  type GuardDecisionOutput,
  type GuardServiceClient,
  loadGatewayGrpc,
  type UsageEvent,
} from '@gateway/proto';
import { eventually, freePort } from '@gateway/testing';
import { readEdgeConfig } from '../config.js';
import type { RequestGuard } from '../guardrails/guard-context.js';
import { catalogOf, testModel } from '../testing/edge-fakes.js';
import { FAKE_PLACEHOLDER, FAKE_SECRET, type FakeStreamGuard, startFakeStreamGuard } from '../testing/fake-stream-check.js';
import { chatCompletionsWire } from '../wire/chat-completions-wire.js';
import { messagesWire } from '../wire/messages-wire.js';
import { responsesWire } from '../wire/responses-wire.js';
import { Completion, type CompletionWire } from './completion.js';
import { relayStream } from './sse-relay.js';

const MODEL = testModel('sim');
const ANSWER = `Harmless start of the answer. The key is ${FAKE_SECRET}, and this text never leaves.`;

/** One executor stream as the fake served it: whether its caller closed it before its end. */
interface ServedStream {
  closed: boolean;
  ended: boolean;
}

/** A grpc-js ExecutorService whose StreamComplete streams ANSWER three characters an event, every 10 ms. */
async function startSlowExecutor(served: ServedStream[]): Promise<GatewayServer & { address: string }> {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'sim',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
  const handlers = {
    async StreamComplete(call: {
      write(event: ExecuteStreamEvent): void;
      end(): void;
      cancelled: boolean;
      on(event: 'cancelled', listener: () => void): void;
    }) {
      const stream: ServedStream = { closed: false, ended: false };
      served.push(stream);
      call.on('cancelled', () => {
        stream.closed = true;
      });
      const parts = [chunk({ role: 'assistant', content: '' })];
      for (let at = 0; at < ANSWER.length; at += 3) parts.push(chunk({ content: ANSWER.slice(at, at + 3) }));
      parts.push(chunk({}, 'stop'));
      for (const [index, json] of parts.entries()) {
        if (call.cancelled) return;
        call.write({
          ...(index === 0 ? { start: { model_id: 'sim', provider: 'openai-compatible', completion_id: 'chatcmpl-1', created: 1 } } : {}),
          rendered: { chunks: [{ json, finishes: json.includes('"finish_reason":"stop"') }], text: '' },
        });
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      if (call.cancelled) return;
      call.write({ end: { model_id: 'sim', provider: 'openai-compatible', usage: { prompt_tokens: 5, completion_tokens: 30, total_tokens: 35 } } });
      stream.ended = true;
      call.end();
    },
  };
  const server = createGatewayServer([
    {
      name: 'gateway.executor.v1.ExecutorService',
      definition: loadGatewayGrpc().gateway.executor.v1.ExecutorService.service,
      handlers: handlers as unknown as GatewayService['handlers'],
    },
  ]);
  const port = await server.listen(`127.0.0.1:${await freePort()}`);
  return Object.assign(server, { address: `127.0.0.1:${port}` });
}

/** The request's guard: its output checked by the guard service over gRPC, in windows of 4 tokens. */
function requestGuard(client: GuardServiceClient): RequestGuard {
  const decisions: GuardDecisionOutput[] = [];
  return {
    policies: [{ name: 'secrets', streamWindow: { tokens: 4, ms: 100 }, enforced: true, onError: 'block', restoreMasked: false, deadlineMs: 1000 }],
    streamWindow: { tokens: 4, ms: 100 },
    async check(point, texts, final) {
      const response = await callUnary<CheckRequest, CheckResponseOutput>(
        client,
        client.Check,
        { request_id: 'req_1', point, policies: ['secrets'], texts: [...texts], final, api: 'chat' },
        { deadlineMs: 2000 },
      );
      decisions.push(...response.decisions);
      return response;
    },
    restore: (text) => text,
    decisions,
  };
}

describe('a streamed answer under output guardrails', () => {
  const served: ServedStream[] = [];
  const outcomes: Array<UsageEvent['outcome']> = [];
  let executor: Awaited<ReturnType<typeof startSlowExecutor>>;
  let blocking: FakeStreamGuard;
  let masking: FakeStreamGuard;
  let app: FastifyInstance;

  beforeAll(async () => {
    executor = await startSlowExecutor(served);
    blocking = await startFakeStreamGuard('block');
    masking = await startFakeStreamGuard('mask');
    const grpc = loadGatewayGrpc().gateway;
    const executorClient = createClient<ExecutorServiceClient>(grpc.executor.v1.ExecutorService, executor.address);
    const guards = {
      block: createClient<GuardServiceClient>(grpc.guard.v1.GuardService, blocking.address),
      mask: createClient<GuardServiceClient>(grpc.guard.v1.GuardService, masking.address),
    };
    const deps = {
      config: readEdgeConfig({}),
      catalog: catalogOf([MODEL]),
      // No CompleteCalls stream is open: each stream is a StreamComplete call of its own.
      completions: { stream: () => undefined } as never,
      executor: executorClient,
    };
    app = Fastify();
    const route = (path: string, wire: CompletionWire<never>) =>
      app.post(path, async (request, reply) => {
        const completion = new Completion(request, reply, wire as CompletionWire);
        completion.routing = { model: MODEL };
        completion.answered = MODEL;
        completion.execute = { request_id: completion.requestId, model_id: 'sim', request: completion.parsed.request, key_id: 'key_1', fallbacks: [] };
        const guard = request.headers['x-guard'];
        if (guard === 'block' || guard === 'mask') completion.guard = requestGuard(guards[guard]);
        await relayStream(deps, completion, (_completion, outcome) => outcomes.push(outcome));
      });
    route('/v1/chat/completions', chatCompletionsWire as CompletionWire<never>);
    route('/v1/responses', responsesWire as CompletionWire<never>);
    route('/v1/messages', messagesWire as CompletionWire<never>);
    await app.ready();
  });

  afterAll(async () => {
    await app?.close();
    await executor?.shutdown(0);
    await blocking?.close();
    await masking?.close();
  });

  const post = (url: string, body: Record<string, unknown>, guard?: 'block' | 'mask') =>
    app.inject({
      method: 'POST',
      url,
      headers: { authorization: 'Bearer sk-test', 'x-api-key': 'sk-test', ...(guard ? { 'x-guard': guard } : {}) },
      payload: { model: 'sim', stream: true, ...body },
    });

  /** The data of each SSE event of a body, parsed (chat's `[DONE]` as it is). */
  const dataOf = (body: string) =>
    body
      .split('\n\n')
      .filter((block) => block.includes('data: '))
      .map((block) => block.slice(block.indexOf('data: ') + 6))
      .map((data) => (data === '[DONE]' ? data : JSON.parse(data)));

  it('chat: a blocked stream ends with content_filter, the gateway summary and [DONE]; the secret never leaves; the executor stream is closed', async () => {
    const before = served.length;
    const response = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'key?' }] }, 'block');
    expect(response.statusCode).toBe(200);
    expect(response.body).not.toContain(FAKE_SECRET);
    expect(response.body).not.toContain('never leaves');
    const events = dataOf(response.body);
    expect(events.at(-1)).toBe('[DONE]');
    const last = events.at(-2);
    expect(last.choices[0].finish_reason).toBe('content_filter');
    expect(last.gateway.routed_to).toBe('sim');
    const text = events
      .slice(0, -1)
      .map((event) => event.choices?.[0]?.delta?.content ?? '')
      .join('');
    expect(text.startsWith('Harmless start')).toBe(true);
    await eventually(() => served[before]?.closed, 'the executor stream closed by the edge');
    expect(served[before]?.ended).toBe(false);
    expect(blocking.checks.some((check) => check.final === false)).toBe(true);
  });

  it('Responses: a blocked stream ends with response.incomplete for content_filter; the executor stream is closed', async () => {
    const before = served.length;
    const response = await post('/v1/responses', { input: 'key?', store: false }, 'block');
    expect(response.body).not.toContain(FAKE_SECRET);
    const events = dataOf(response.body);
    const last = events.at(-1);
    expect(last.type).toBe('response.incomplete');
    expect(last.response.incomplete_details).toEqual({ reason: 'content_filter' });
    await eventually(() => served[before]?.closed, 'the executor stream closed by the edge');
  });

  it('Messages: a blocked stream ends with message_delta (stop_reason refusal) and message_stop; the executor stream is closed', async () => {
    const before = served.length;
    const response = await post('/v1/messages', { max_tokens: 64, messages: [{ role: 'user', content: 'key?' }] }, 'block');
    expect(response.body).not.toContain(FAKE_SECRET);
    const types = dataOf(response.body).map((event) => event.type);
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
    const delta = dataOf(response.body).at(-2);
    expect(delta.delta.stop_reason).toBe('refusal');
    await eventually(() => served[before]?.closed, 'the executor stream closed by the edge');
  });

  it('masks the secret in a stream that then completes as usual, to its end', async () => {
    const before = served.length;
    const response = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'key?' }] }, 'mask');
    expect(response.body).not.toContain(FAKE_SECRET);
    const events = dataOf(response.body);
    const text = events
      .slice(0, -1)
      .map((event) => event.choices?.[0]?.delta?.content ?? '')
      .join('');
    expect(text).toBe(ANSWER.replace(FAKE_SECRET, FAKE_PLACEHOLDER));
    expect(events.at(-2).choices[0].finish_reason).toBe('stop');
    expect(served[before]?.ended).toBe(true);
    expect(outcomes.at(-1)).toBe('OUTCOME_COMPLETED');
  });

  it('without a guard streams every chunk as it comes, the secret included (nothing is checked)', async () => {
    const checks = blocking.checks.length + masking.checks.length;
    const response = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'key?' }] });
    const text = dataOf(response.body)
      .slice(0, -1)
      .map((event) => event.choices?.[0]?.delta?.content ?? '')
      .join('');
    expect(text).toBe(ANSWER);
    expect(blocking.checks.length + masking.checks.length).toBe(checks);
  });
});
