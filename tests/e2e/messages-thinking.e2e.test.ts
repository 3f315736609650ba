/**
 * Extended thinking through the Messages API with the official `@anthropic-ai/sdk`, on a Claude
 * model behind a fake Anthropic upstream that thinks and signs its thinking and, like Anthropic,
 * refuses a tool-use turn sent back without its signed thinking block first
 * (anthropic-thinking-upstream.ts); and the same conversation on a model behind a translated
 * (OpenAI-compatible) upstream, which gets none of the thinking. What a user notices: thinking
 * blocks with signatures, whole and streamed; a tool round trip that works because the block goes
 * back unchanged and first; the beta flags reaching Anthropic.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayJson, startFakeUpstream, type FakeUpstream, providerFixture } from '@gateway/testing';
import { signatureOf, thinkingModel } from './anthropic-thinking-upstream.js';
import { anthropicModelEntry } from './cli-backend.js';
import { fakeModelEntry, writeCatalog } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';
import { itThinks, THOUGHT, WEATHER_TOOL } from './thinking-checks.js';

const KEY_VARIABLE = 'FAKE_PROVIDER_API_KEY';

let anthropicUpstream: FakeUpstream;
let openAiUpstream: FakeUpstream;
const gateway = new ClusterFixture();

beforeAll(async () => {
  anthropicUpstream = await startFakeUpstream(thinkingModel());
  openAiUpstream = await startFakeUpstream(replayJson(200, providerFixture('openai-compatible', 'chat-completion.json')));
  const catalog = writeCatalog('messages-thinking', [
    anthropicModelEntry(anthropicUpstream.baseUrl, KEY_VARIABLE, 'fake-claude'),
    fakeModelEntry(openAiUpstream.baseUrl, KEY_VARIABLE, 'fake-openai', []),
  ]);
  await gateway.start({ env: { CATALOG_PATH: catalog, [KEY_VARIABLE]: 'sk-fake-provider-thinking-0123456789' } });
});

afterAll(async () => {
  await gateway.stop(anthropicUpstream, openAiUpstream);
});

/** The last request the fake Anthropic upstream received. */
function lastUpstreamRequest() {
  return anthropicUpstream.requests.at(-1)!;
}

describe('extended thinking on a Claude model (Anthropic upstream)', () => {
  itThinks(gateway, {
    name: 'Anthropic',
    model: 'fake-claude',
    streamedText: 'Hello from a thinking model.',
    expectThinkingSent: () => {
      const received = lastUpstreamRequest();
      expect(received.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
      expect(String(received.headers['anthropic-beta']).split(',')).toContain('interleaved-thinking-2025-05-14');
    },
    answer: 'The tool said: "3 degrees"',
    sentAssistantTurn: () => (lastUpstreamRequest().body.messages as unknown[])[1],
    expectedAssistantTurn: (callId) => ({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: THOUGHT, signature: signatureOf(THOUGHT) },
        { type: 'tool_use', id: callId, name: 'get_weather', input: { city: 'Oslo' } },
      ],
    }),
  });
});

describe('extended thinking on a model behind a translated upstream', () => {
  it('drops thinking and the signed blocks, and answers a conversation that carries them', async () => {
    const message = await gateway.anthropic.beta.messages.create({
      model: 'fake-openai',
      max_tokens: 1024,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      betas: ['interleaved-thinking-2025-05-14'],
      tools: [WEATHER_TOOL],
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: THOUGHT, signature: signatureOf(THOUGHT) },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '3 degrees' }] },
      ],
    });
    expect(message.content.some((block) => block.type === 'text')).toBe(true);
    const sent = openAiUpstream.requests.at(-1)!;
    expect(JSON.stringify(sent.body)).not.toMatch(/thinking|signature|opaque|interleaved/);
    expect(sent.headers['anthropic-beta']).toBeUndefined();
    expect((sent.body.messages as unknown[])[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
    });
  });
});
