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
import Anthropic from '@anthropic-ai/sdk';
import { replayJson, startFakeUpstream, type FakeUpstream, providerFixture } from '@gateway/testing';
import { signatureOf, thinkingModel } from './anthropic-thinking-upstream.js';
import { anthropicModelEntry } from './cli-backend.js';
import { fakeModelEntry, startCluster, writeCatalog, type Cluster } from './cluster.js';

const KEY_VARIABLE = 'FAKE_PROVIDER_API_KEY';
const THOUGHT = 'The user asks about Oslo; I should use the tool first.';

let anthropicUpstream: FakeUpstream;
let openAiUpstream: FakeUpstream;
let cluster: Cluster;
let client: Anthropic;

const WEATHER_TOOL = { name: 'get_weather', description: 'Weather now', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } };

beforeAll(async () => {
  anthropicUpstream = await startFakeUpstream(thinkingModel());
  openAiUpstream = await startFakeUpstream(replayJson(200, providerFixture('openai-compatible', 'chat-completion.json')));
  const catalog = writeCatalog('messages-thinking', [
    anthropicModelEntry(anthropicUpstream.baseUrl, KEY_VARIABLE, 'fake-claude'),
    fakeModelEntry(openAiUpstream.baseUrl, KEY_VARIABLE, 'fake-openai', []),
  ]);
  cluster = await startCluster({ env: { CATALOG_PATH: catalog, [KEY_VARIABLE]: 'sk-fake-provider-thinking-0123456789' } });
  client = new Anthropic({ baseURL: cluster.baseUrl.replace(/\/v1$/, ''), apiKey: cluster.apiKey, maxRetries: 0 });
});

afterAll(async () => {
  await cluster?.stop();
  await anthropicUpstream?.close();
  await openAiUpstream?.close();
});

/** The last request the fake Anthropic upstream received. */
function lastUpstreamRequest() {
  return anthropicUpstream.requests.at(-1)!;
}

describe('extended thinking on a Claude model (Anthropic upstream)', () => {
  it('creates a message whose thinking block carries its signature; thinking and the betas reach Anthropic', async () => {
    const message = await client.beta.messages.create({
      model: 'fake-claude',
      max_tokens: 4096,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      betas: ['interleaved-thinking-2025-05-14'],
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(message.content[0]).toEqual({ type: 'thinking', thinking: THOUGHT, signature: signatureOf(THOUGHT) });
    const received = lastUpstreamRequest();
    expect(received.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(String(received.headers['anthropic-beta']).split(',')).toContain('interleaved-thinking-2025-05-14');
  });

  it('streams the thinking block (thinking_delta, signature_delta) before the text, and the final message has it whole', async () => {
    const stream = client.messages.stream({
      model: 'fake-claude',
      max_tokens: 4096,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: [{ role: 'user', content: 'Hello' }],
    });
    const deltas: string[] = [];
    let thinking = '';
    let signature = '';
    for await (const event of stream) {
      if (event.type !== 'content_block_delta') continue;
      deltas.push(event.delta.type);
      if (event.delta.type === 'thinking_delta') thinking += event.delta.thinking;
      if (event.delta.type === 'signature_delta') signature = event.delta.signature;
    }
    const final = await stream.finalMessage();
    expect(deltas).toEqual(['thinking_delta', 'thinking_delta', 'signature_delta', 'text_delta']);
    expect([thinking, signature]).toEqual([THOUGHT, signatureOf(THOUGHT)]);
    expect(final.content[0]).toEqual({ type: 'thinking', thinking: THOUGHT, signature: signatureOf(THOUGHT) });
    expect(final.content[1]).toMatchObject({ type: 'text', text: 'Hello from a thinking model.' });
  });

  it('completes a tool round trip: the signed thinking block goes back unchanged and first; without it Anthropic refuses', async () => {
    const ask: Anthropic.MessageParam = { role: 'user', content: 'Weather in Oslo?' };
    const base = { model: 'fake-claude', max_tokens: 4096, thinking: { type: 'enabled' as const, budget_tokens: 2048 }, tools: [WEATHER_TOOL] };
    for (const streamed of [false, true]) {
      const first = streamed
        ? await client.messages.stream({ ...base, messages: [ask] }).finalMessage()
        : await client.messages.create({ ...base, messages: [ask] });
      expect(first.stop_reason).toBe('tool_use');
      expect(first.content.map((block) => block.type)).toEqual(['thinking', 'tool_use']);
      const call = first.content[1] as Anthropic.ToolUseBlock;
      const result: Anthropic.MessageParam = { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '3 degrees' }] };
      const second = await client.messages.create({ ...base, messages: [ask, { role: 'assistant', content: first.content }, result] });
      expect(second.content.at(-1)).toMatchObject({ type: 'text', text: 'The tool said: "3 degrees"' });
      const assistantTurn = (lastUpstreamRequest().body.messages as Array<{ role: string; content: unknown[] }>)[1]!;
      expect(assistantTurn).toEqual({
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: THOUGHT, signature: signatureOf(THOUGHT) },
          { type: 'tool_use', id: call.id, name: 'get_weather', input: { city: 'Oslo' } },
        ],
      });
    }
    // The same turn without its thinking block: Anthropic's 400 reaches the client.
    const withoutThinking = client.messages.create({
      ...base,
      messages: [
        ask,
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '3 degrees' }] },
      ],
    });
    const refused = await withoutThinking.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect(String((refused as Error).message)).toContain('must start with a thinking block');
  });
});

describe('extended thinking on a model behind a translated upstream', () => {
  it('drops thinking and the signed blocks, and answers a conversation that carries them', async () => {
    const message = await client.beta.messages.create({
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
