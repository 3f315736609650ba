import { describe, expect, it } from 'vitest';
import { GatewayError, GrpcStatus, Metadata } from '@gateway/grpc';
import { prometheus } from '@gateway/observability';
import type { ChatRequest, ExecuteRequest, ExecuteResponseOutput, ExecuteStreamEventOutput } from '@gateway/proto';
import {
  replayJson,
  replaySse,
  startFakeUpstream,
  type FakeUpstream,
  openAiCompatibleModel,
  simulatedModel,
  TEST_KEY,
  fixture,
  providerFixture,
} from '@gateway/testing';
import { useExecutor } from './testing/executor-under-test.js';

let upstream: FakeUpstream;
let registry: prometheus.Registry;

const executor = useExecutor(async () => {
  upstream = await startFakeUpstream(replayJson(200, fixture('chat-completion.json')));
  registry = new prometheus.Registry();
  return {
    models: [
      simulatedModel(),
      simulatedModel({ id: 'sim-paced', simulation: { time_to_first_token_ms: 0, tokens_per_second: 200 } }),
      openAiCompatibleModel(upstream.baseUrl),
      openAiCompatibleModel(upstream.baseUrl, {
        id: 'switched-off',
        upstream: { model: 'gpt-4o', base_url: upstream.baseUrl, api_key_env: 'UNSET_KEY_VARIABLE' },
      }),
      {
        ...simulatedModel(),
        id: 'claude-test',
        provider: 'anthropic',
        upstream: { model: 'claude-sonnet', base_url: new URL(upstream.baseUrl).origin, api_key_env: 'ANTHROPIC_TEST_KEY' },
      },
    ],
    timeouts: { connectMs: 1000, firstByteMs: 5000, idleMs: 5000 },
    environment: { ANTHROPIC_TEST_KEY: 'sk-ant-test' },
    registry,
    started: [upstream],
  };
});

function chatRequest(text: string, extra: Partial<ChatRequest> = {}): ChatRequest {
  return { model: 'auto', messages: [{ role: 'ROLE_USER', text }], ...extra };
}

function executeRequest(modelId: string, request: ChatRequest): ExecuteRequest {
  return { request_id: 'req-test', model_id: modelId, key_id: 'key_test', request };
}

function metadata(): Metadata {
  const value = new Metadata();
  value.set('x-request-id', 'req-test');
  return value;
}

function complete(request: ExecuteRequest): Promise<ExecuteResponseOutput> {
  return new Promise((resolve, reject) => {
    executor.client.Complete(request, metadata(), { deadline: Date.now() + 10_000 }, (error, response) =>
      error ? reject(error) : resolve(response as ExecuteResponseOutput),
    );
  });
}

/** Reads a whole stream: its events, and the error status it ended with, if any. */
function streamComplete(request: ExecuteRequest): Promise<{ events: ExecuteStreamEventOutput[]; error?: GatewayError }> {
  return new Promise((resolve) => {
    const events: ExecuteStreamEventOutput[] = [];
    const call = executor.client.StreamComplete(request, metadata(), { deadline: Date.now() + 10_000 });
    call.on('data', (event: ExecuteStreamEventOutput) => events.push(event));
    call.on('error', (error) => resolve({ events, error: GatewayError.fromServiceError(error) }));
    call.on('end', () => resolve({ events }));
  });
}

/** An OpenAI chunk as the executor rendered it. */
interface RenderedChunkJson {
  choices: Array<{ delta: { role?: string; content?: string }; finish_reason: string | null }>;
  usage?: unknown;
}

/** The chunks of a stream's events, as the caller will read them. */
function chunksOf(events: ExecuteStreamEventOutput[]): RenderedChunkJson[] {
  return events.flatMap((event) => event.rendered?.chunks ?? []).map((chunk) => JSON.parse(chunk.json ?? '') as RenderedChunkJson);
}

function contentOf(events: ExecuteStreamEventOutput[]): string {
  return chunksOf(events)
    .flatMap((chunk) => chunk.choices)
    .map((choice) => choice.delta.content ?? '')
    .join('');
}

describe('ExecutorService over gRPC', () => {
  it('Complete answers from a simulated model', async () => {
    const response = await complete(executeRequest('sim-fast', chatRequest('Hello executor', { seed: 9 })));
    expect(response.provider).toBe('simulated');
    expect(response.response?.model).toBe('sim-fast');
    expect(response.response?.choices[0]?.finish_reason).toBe('FINISH_REASON_STOP');
    expect(response.response?.choices[0]?.message?.content?.length).toBeGreaterThan(10);
    expect(response.response?.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('StreamComplete sends the chunks, then exactly one end event with the usage of the whole stream', async () => {
    const request = executeRequest('sim-paced', chatRequest('Hello executor', { seed: 9, stream: true }));
    const whole = await complete(request);
    const { events, error } = await streamComplete(request);
    expect(error).toBeUndefined();
    const ends = events.filter((event) => event.event === 'end');
    expect(ends).toHaveLength(1);
    expect(events.at(-1)?.event).toBe('end');
    // A simulated model answers in-process: its one deployment.
    expect(ends[0]?.end).toEqual({ usage: whole.response?.usage, provider: 'simulated', model_id: 'sim-paced', attempts: [], deployment_id: '0:in-process' });
    expect(events[0]?.start).toMatchObject({ model_id: 'sim-paced', provider: 'simulated', attempts: [] });
    expect(events[0]?.start?.completion_id).toMatch(/^chatcmpl-/);
    expect(events.slice(1).every((event) => event.start === undefined)).toBe(true);
    const chunks = chunksOf(events);
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.every((chunk) => !chunk.usage)).toBe(true);
    expect(contentOf(events)).toBe(whole.response?.choices[0]?.message?.content);
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
    // The text of the chunks travels beside them, for counting a stream cut short.
    expect(events.map((event) => event.rendered?.text ?? '').join('')).toBe(whole.response?.choices[0]?.message?.content);
  });

  it('StreamComplete relays an openai-compatible stream with the upstream usage in the end event', async () => {
    upstream.respond(replaySse(fixture('stream-text.sse')));
    const { events, error } = await streamComplete(executeRequest('fake/gpt-4o-mini', chatRequest('Hi', { stream: true })));
    expect(error).toBeUndefined();
    expect(contentOf(events)).toBe('Hello! How can I help?');
    expect(chunksOf(events)).toHaveLength(5);
    expect(events.at(-1)?.end).toEqual({
      usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18, cached_tokens: 0, reasoning_tokens: 0 },
      provider: 'openai-compatible',
      model_id: 'fake/gpt-4o-mini',
      attempts: [],
      deployment_id: expect.stringMatching(/^0:/),
    });
  });

  it('delivers a mid-stream failure as an error status after the chunks already sent and a failure event with their usage', async () => {
    const { events, error } = await streamComplete(executeRequest('sim-fast', chatRequest('Fail later [[simulate:fail_after=4]]')));
    expect(chunksOf(events)).toHaveLength(4);
    expect(events.slice(0, -1).every((event) => event.event === 'rendered')).toBe(true);
    expect(events.at(-1)?.event).toBe('failure');
    const failure = events.at(-1)?.failure;
    expect(failure).toMatchObject({ provider: 'simulated', model_id: 'sim-fast', usage_estimated: true });
    expect(failure?.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(failure?.usage?.completion_tokens).toBeGreaterThan(0);
    expect(error).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'upstream_error', retryable: true, provider: 'simulated' });
  });

  it('answers NOT_FOUND model_not_found with the ErrorInfo trailer for an unknown or switched-off model', async () => {
    for (const modelId of ['no-such-model', 'switched-off']) {
      const failure = await complete(executeRequest(modelId, chatRequest('Hi'))).then(
        () => undefined,
        (error: unknown) => GatewayError.fromServiceError(error),
      );
      expect(failure).toMatchObject({ code: GrpcStatus.NOT_FOUND, reason: 'model_not_found', retryable: false });
      expect(failure?.message).toContain(modelId);
      const streamed = await streamComplete(executeRequest(modelId, chatRequest('Hi')));
      expect(streamed.events).toEqual([]);
      expect(streamed.error).toMatchObject({ code: GrpcStatus.NOT_FOUND, reason: 'model_not_found' });
    }
  });

  it('serves an anthropic model through its adapter (Messages API at the fake upstream)', async () => {
    upstream.respond(replayJson(200, providerFixture('anthropic', 'message.json')));
    const response = await complete(executeRequest('claude-test', chatRequest('Hi')));
    expect(response.provider).toBe('anthropic');
    expect(response.response?.choices[0]?.message?.content).toBe('Hi! My name is Claude. How can I help you today?');
    expect(response.response?.usage).toMatchObject({ prompt_tokens: 2160, cached_tokens: 2048 });
    expect(upstream.requests.at(-1)?.path).toBe('/v1/messages');
    expect(upstream.requests.at(-1)?.headers['x-api-key']).toBe('sk-ant-test');
  });

  it('carries upstream failures as typed statuses: a simulated 429 with its retry-after', async () => {
    const failure = await complete(executeRequest('sim-fast', chatRequest('[[simulate:error=429]] [[simulate:retry_after_ms=1500]]'))).then(
      () => undefined,
      (error: unknown) => GatewayError.fromServiceError(error),
    );
    expect(failure).toMatchObject({
      code: GrpcStatus.RESOURCE_EXHAUSTED,
      reason: 'upstream_rate_limited',
      retryable: true,
      retryAfterMs: 1500,
      upstreamStatus: 429,
      provider: 'simulated',
    });
  });

  it('aborts the upstream request when the caller cancels the stream', async () => {
    upstream.respond(replaySse(fixture('stream-text.sse'), { delayMs: 5_000, end: false }));
    const before = upstream.requests.length;
    const call = executor.client.StreamComplete(executeRequest('fake/gpt-4o-mini', chatRequest('Hi')), metadata(), { deadline: Date.now() + 10_000 });
    call.on('error', () => {
      /* CANCELLED, expected */
    });
    await new Promise<void>((resolve) => call.once('data', () => resolve()));
    const cancelledAt = performance.now();
    call.cancel();
    const closedAt = await upstream.requests[before]?.closed;
    // The upstream pauses 5 s before its next event: its call closed well before that, unfinished,
    // so the cancel reached it (a bound for a loaded machine, not a target).
    expect((closedAt as number) - cancelledAt).toBeLessThan(2_000);
    expect(upstream.requests[before]?.finished).toBe(false);
  });

  it('counts requests by model, provider and outcome', async () => {
    const text = await registry.metrics();
    expect(text).toMatch(/gateway_executor_requests_total\{model="sim-fast",provider="simulated",outcome="ok"\} [1-9]/);
    expect(text).toMatch(/gateway_executor_requests_total\{model="unknown",provider="unknown",outcome="model_not_found"\} [1-9]/);
    expect(text).toMatch(/gateway_executor_requests_total\{model="sim-fast",provider="simulated",outcome="upstream_error"\} 1/);
    expect(text).toContain('gateway_executor_upstream_duration_seconds_bucket');
    expect(text).not.toContain(TEST_KEY);
  });
});
