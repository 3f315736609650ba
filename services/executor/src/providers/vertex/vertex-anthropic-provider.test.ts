import { describe, expect, it } from 'vitest';
import { GrpcStatus } from '@gateway/grpc';
import type { ChatRequestOutput } from '@gateway/proto';
import { replayJson, replaySse, vertexAnthropicModel, providerFixture } from '@gateway/testing';
import { chunksOf, simpleRequest, textOf, THINKING_SIGNATURE } from '../../testing/provider-calls.js';
import { expectRetryableUnavailable } from '../../testing/provider-under-test.js';
import { useVertexUnderTest } from '../../testing/fake-google-auth.js';
import { VertexAnthropicProvider } from './vertex-anthropic-provider.js';

const anthropic = (name: string) => providerFixture('anthropic', name);
const vertex = (name: string) => providerFixture('vertex', name);

// Application Default Credentials on GKE: the library asks the fake metadata server for tokens.
const { google, under } = useVertexUnderTest('metadata-server', (dependencies) => new VertexAnthropicProvider(dependencies), vertexAnthropicModel);
const { gated } = google;

/** A request with thinking on, an earlier signed thinking block, cache breakpoints and a tool. */
function claudeCodeLikeRequest(): ChatRequestOutput {
  return simpleRequest({
    messages: [
      { role: 'ROLE_SYSTEM', content: 'text', text: 'You are a coding agent.', tool_calls: [], cache_control: { type: 'ephemeral', ttl: '1h' } },
      { role: 'ROLE_USER', content: 'text', text: 'List the files.', tool_calls: [] },
      {
        role: 'ROLE_ASSISTANT',
        content: 'parts',
        parts: { parts: [{ thinking: { thinking: 'I should run ls.', signature: THINKING_SIGNATURE }, part: 'thinking' }] },
        tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }],
      },
      { role: 'ROLE_TOOL', content: 'text', text: 'README.md', tool_call_id: 'toolu_1', tool_calls: [], cache_control: { type: 'ephemeral' } },
    ],
    max_tokens: 4096,
    thinking: { type: 'enabled', budget_tokens: 2048 },
    tools: [{ type: 'function', function: { name: 'bash', parameters_json: '{"type":"object","properties":{"command":{"type":"string"}}}' } }],
    anthropic_betas: { flags: ['interleaved-thinking-2025-05-14'] },
  });
}

describe('VertexAnthropicProvider: requests it sends', () => {
  it('posts the Messages body without model and with the Vertex version to rawPredict, with a metadata-server token', async () => {
    await under.completeWith(gated(replayJson(200, anthropic('message.json'))), claudeCodeLikeRequest());
    const received = under.upstream.requests[0];
    expect(received?.path).toBe('/v1/projects/acme-prod-ml/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');
    expect(received?.headers.authorization).toMatch(/^Bearer ya29\.fake-metadata-/);
    expect(received?.headers['x-api-key']).toBeUndefined();
    expect(received?.headers['anthropic-version']).toBeUndefined();
    expect(received?.headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14');
    expect(received?.body).not.toHaveProperty('model');
    expect(received?.body).toMatchObject({
      anthropic_version: 'vertex-2023-10-16',
      max_tokens: 4096,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [
        { role: 'user', content: 'List the files.' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'I should run ls.', signature: THINKING_SIGNATURE },
            { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'README.md', cache_control: { type: 'ephemeral' } }] },
      ],
      tools: [{ name: 'bash' }],
    });
    expect(google.auth.tokenRequests).toEqual([{ via: 'metadata', granted: true }]);
  });

  it('streams from streamRawPredict with stream: true, on the token it already has', async () => {
    await under.streamWith(gated(replaySse(anthropic('stream-text.sse'))));
    const received = under.upstream.requests[0];
    expect(received?.path).toBe('/v1/projects/acme-prod-ml/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict');
    expect(received?.body).toMatchObject({ anthropic_version: 'vertex-2023-10-16', stream: true });
    expect(google.auth.tokenRequests).toHaveLength(1);
  });
});

describe('VertexAnthropicProvider: answers', () => {
  it('answers whole with text, tool calls and signed thinking blocks as Anthropic sends them', async () => {
    expect((await under.completeWith(gated(replayJson(200, anthropic('message.json'))))).choices?.[0]?.message?.content).toBeTruthy();
    const tools = await under.completeWith(gated(replayJson(200, anthropic('message-tool-use.json'))));
    expect(tools.choices?.[0]?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(tools.choices?.[0]?.message?.tool_calls?.length).toBeGreaterThan(0);
    const thinking = await under.completeWith(gated(replayJson(200, anthropic('message-thinking.json'))));
    expect(thinking.choices?.[0]?.message?.thinking?.blocks?.[0]).toEqual({
      thinking: { thinking: 'The user wants the weather in Paris. I should call get_weather.', signature: THINKING_SIGNATURE },
    });
  });

  it('reports cache writes and reads in the usage', async () => {
    const response = await under.completeWith(gated(replayJson(200, anthropic('message-cache-write.json'))));
    expect(response.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(JSON.stringify(response.usage)).toMatch(/cache_write/);
  });

  it('streams text, thinking ended by its signature, and tool calls', async () => {
    const text = await under.streamWith(gated(replaySse(anthropic('stream-text.sse'))));
    expect(textOf(chunksOf(text))).not.toBe('');
    expect(text.at(-1)?.type).toBe('usage');
    const thinking = chunksOf(await under.streamWith(gated(replaySse(anthropic('stream-thinking.sse')))));
    expect(thinking.map((chunk) => chunk.choices?.[0]?.delta?.thinking_signature).filter(Boolean)).toEqual([THINKING_SIGNATURE]);
    const tools = chunksOf(await under.streamWith(gated(replaySse(anthropic('stream-tool-use.sse')))));
    expect(tools.flatMap((chunk) => chunk.choices?.[0]?.delta?.tool_calls ?? []).length).toBeGreaterThan(0);
  });

  it('fails a stream cut before message_stop as truncated', async () => {
    const { events, failure } = await under.drainWith(gated(replaySse(anthropic('stream-text.sse').split('event: message_stop')[0] as string)));
    expect(failure).toMatchObject({ kind: 'truncated', retryable: true, provider: 'vertex-anthropic' });
    expect(events.every((event) => event.type === 'chunk')).toBe(true);
  });
});

describe('VertexAnthropicProvider: upstream failures in either envelope', () => {
  it("maps Anthropic's 400 invalid_request_error to INVALID_ARGUMENT with its message", async () => {
    await under.expectInvalidRequest(gated(replayJson(400, anthropic('error-400.json'))), JSON.parse(anthropic('error-400.json')).error.message);
  });

  it("maps Vertex's 429 RESOURCE_EXHAUSTED to RESOURCE_EXHAUSTED with its Retry-After, whole and streamed", async () => {
    for (const call of ['complete', 'stream'] as const) {
      const limited = await under.expectRateLimited(gated(replayJson(429, vertex('error-429-quota.json'), { 'retry-after': '4' })), 4_000, call);
      expect(limited.provider).toBe('vertex-anthropic');
    }
  });

  it("maps Anthropic's 529 overloaded_error and Vertex's 503 to retryable UNAVAILABLE", async () => {
    await expectRetryableUnavailable(under.failureOf(gated(replayJson(529, anthropic('error-529.json')))), 529);
    await expectRetryableUnavailable(
      under.failureOf(
        gated(replayJson(503, JSON.stringify({ error: { code: 503, message: 'The service is currently unavailable.', status: 'UNAVAILABLE' } }))),
      ),
      503,
    );
  });

  it("maps Vertex's 401 UNAUTHENTICATED to FAILED_PRECONDITION without its message", async () => {
    const error = await under.failureOf(gated(replayJson(401, vertex('error-401.json'))));
    expect(error).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', retryable: false, upstreamStatus: 401 });
    expect(error.message).not.toContain('OAuth');
  });
});

describe('VertexAnthropicProvider: cancellation', () => {
  it('closes the upstream connection promptly when a stream is aborted', () =>
    under.expectStreamAbortClosesUpstream(gated(replaySse(anthropic('stream-text.sse'), { delayMs: 5_000, end: false }))));
});
