import { describe, expect, it } from 'vitest';
import { messageCodec, type ChatChunk, type ChatChunkOutput, type ChatResponse, type ChatResponseOutput } from '@gateway/proto';
import { chatCompletionJson, chunkJson, usageChunkJson, usageJson } from './format-response.js';

const gateway = { routed_to: 'sim-mini', latency_ms: 12.5, cost_usd: 0.000001 };

describe('chatCompletionJson', () => {
  it('writes every key real clients read, tool-call arguments as strings', () => {
    const json = chatCompletionJson(
      {
        id: 'chatcmpl-1',
        created: 5,
        model: 'sim-mini',
        choices: [
          {
            index: 0,
            finish_reason: 'FINISH_REASON_TOOL_CALLS',
            message: { tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
          },
        ],
        usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, cached_tokens: 1 },
      },
      gateway,
    );
    expect(json.object).toBe('chat.completion');
    const choice = json.choices[0]!;
    expect(choice).toMatchObject({ index: 0, logprobs: null, finish_reason: 'tool_calls' });
    expect(choice.message).toMatchObject({ role: 'assistant', content: null, refusal: null });
    expect(choice.message.tool_calls![0]!.function.arguments).toBe('{"a":1}');
    expect(json.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, prompt_tokens_details: { cached_tokens: 1 } });
    expect(json.gateway).toEqual(gateway);
  });
});

describe('usageJson', () => {
  it('adds cache_write_tokens to prompt_tokens_details only when the provider wrote to its cache', () => {
    expect(usageJson({ prompt_tokens: 10, completion_tokens: 1, total_tokens: 11, cached_tokens: 4 }).prompt_tokens_details).toEqual({
      cached_tokens: 4,
      audio_tokens: 0,
    });
    expect(
      usageJson({ prompt_tokens: 10, completion_tokens: 1, total_tokens: 11, cached_tokens: 4, cache_write_tokens: 5, cache_write_1h_tokens: 5 })
        .prompt_tokens_details,
    ).toEqual({ cached_tokens: 4, audio_tokens: 0, cache_write_tokens: 5 });
  });
});

describe('log probabilities', () => {
  // Through the protobuf wire, as the executor sends them: a zero logprob and empty lists arrive as absent fields.
  const responseCodec = messageCodec<ChatResponse, ChatResponseOutput>('gateway.chat.v1.ChatResponse');
  const chunkCodec = messageCodec<ChatChunk, ChatChunkOutput>('gateway.chat.v1.ChatChunk');
  const identity = { id: 'chatcmpl-1', created: 5, model: 'gpt-4o-mini', includeUsage: false };

  // Tokens as the provider sent them and as OpenAI's shape writes them back.
  const HELLO = { token: 'Hello', logprob: -0.31725305, bytes: [72, 101, 108, 108, 111] };
  const END = { token: '<|end|>', logprob: -10.953937 };
  const REST = [
    { token: ' Sant', logprob: -0.058394875, bytes: [32, 83, 97, 110, 116], top_logprobs: [] },
    { token: 'orini', logprob: 0, bytes: [111, 114, 105, 110, 105], top_logprobs: [] },
  ];

  it("writes each content token with logprob, bytes and top_logprobs in OpenAI's shape, refusal null", () => {
    const response = responseCodec.decode(
      responseCodec.encode({
        id: 'chatcmpl-1',
        created: 5,
        model: 'gpt-4o-mini',
        choices: [
          {
            index: 0,
            finish_reason: 'FINISH_REASON_STOP',
            message: { content: 'Hello Santorini' },
            logprobs: {
              content: {
                tokens: [{ ...HELLO, top_logprobs: [HELLO, { ...END, bytes: [] }] }, ...REST],
              },
            },
          },
        ],
      }),
    );
    expect(chatCompletionJson(response, gateway).choices[0]!.logprobs).toEqual({
      // A token without bytes (a special token's) is written with bytes null.
      content: [{ ...HELLO, top_logprobs: [HELLO, { ...END, bytes: null }] }, ...REST],
      refusal: null,
    });
  });

  it('writes refusal tokens with content null, and null when the provider reported none', () => {
    const refused = responseCodec.decode(
      responseCodec.encode({
        id: 'chatcmpl-1',
        model: 'gpt-4o-mini',
        choices: [
          {
            index: 0,
            finish_reason: 'FINISH_REASON_STOP',
            message: { refusal: 'No.' },
            logprobs: { refusal: { tokens: [{ token: 'No.', logprob: -0.5, bytes: [78, 111, 46] }] } },
          },
        ],
      }),
    );
    expect(chatCompletionJson(refused, gateway).choices[0]!.logprobs).toEqual({
      content: null,
      refusal: [{ token: 'No.', logprob: -0.5, bytes: [78, 111, 46], top_logprobs: [] }],
    });
    const plain = responseCodec.decode(
      responseCodec.encode({
        id: 'chatcmpl-1',
        model: 'gpt-4o-mini',
        choices: [{ index: 0, finish_reason: 'FINISH_REASON_STOP', message: { content: 'Hi' } }],
      }),
    );
    expect(chatCompletionJson(plain, gateway).choices[0]!.logprobs).toBeNull();
  });

  it("writes a chunk's own tokens, an empty list where the provider sent one, and null on chunks without", () => {
    const role = chunkCodec.decode(
      chunkCodec.encode({ choices: [{ index: 0, delta: { role: 'ROLE_ASSISTANT', content: '' }, logprobs: { content: { tokens: [] } } }] }),
    );
    expect(chunkJson(role, identity).choices[0]!.logprobs).toEqual({ content: [], refusal: null });
    const token = chunkCodec.decode(
      chunkCodec.encode({
        choices: [
          {
            index: 0,
            delta: { content: '!' },
            logprobs: {
              content: { tokens: [{ token: '!', logprob: -0.02380986, bytes: [33], top_logprobs: [{ token: '!', logprob: -0.02380986, bytes: [33] }] }] },
            },
          },
        ],
      }),
    );
    expect(chunkJson(token, identity).choices[0]).toEqual({
      index: 0,
      delta: { content: '!' },
      finish_reason: null,
      logprobs: {
        content: [{ token: '!', logprob: -0.02380986, bytes: [33], top_logprobs: [{ token: '!', logprob: -0.02380986, bytes: [33] }] }],
        refusal: null,
      },
    });
    const finish = chunkCodec.decode(chunkCodec.encode({ choices: [{ index: 0, delta: {}, finish_reason: 'FINISH_REASON_STOP' }] }));
    expect(chunkJson(finish, identity).choices[0]!.logprobs).toBeNull();
  });
});

describe('the deprecated function calling', () => {
  const response = {
    id: 'chatcmpl-1',
    created: 5,
    model: 'sim-mini',
    choices: [
      {
        index: 0,
        finish_reason: 'FINISH_REASON_TOOL_CALLS' as const,
        message: { tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
      },
    ],
  };

  it('answers a caller of functions with message.function_call and finish_reason function_call', () => {
    const choice = chatCompletionJson(response, gateway, true).choices[0]!;
    expect(choice.finish_reason).toBe('function_call');
    expect(choice.message).toMatchObject({ role: 'assistant', content: null, function_call: { name: 'f', arguments: '{"a":1}' } });
    expect(choice.message).not.toHaveProperty('tool_calls');
    expect(chatCompletionJson(response, gateway).choices[0]!.message).not.toHaveProperty('function_call');
  });

  it('streams the call as delta.function_call: the name once, then argument fragments', () => {
    const identity = { id: 'chatcmpl-1', created: 5, model: 'sim-mini', includeUsage: false, legacyFunctions: true };
    const first = chunkJson(
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] } }] },
      identity,
    );
    const later = chunkJson({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] } }] }, identity);
    const last = chunkJson({ choices: [{ index: 0, finish_reason: 'FINISH_REASON_TOOL_CALLS', delta: { tool_calls: [] } }] }, identity);
    expect(first.choices[0]!.delta).toEqual({ function_call: { name: 'f', arguments: '' } });
    expect(later.choices[0]!.delta).toEqual({ function_call: { arguments: '{"a"' } });
    expect(last.choices[0]!.finish_reason).toBe('function_call');
  });
});

describe('chunkJson', () => {
  const identity = { id: 'chatcmpl-1', created: 5, model: 'sim-mini', includeUsage: true };

  it('puts role only where sent, usage null when usage was asked for', () => {
    const json = chunkJson({ choices: [{ index: 0, delta: { role: 'ROLE_ASSISTANT', content: '', tool_calls: [] } }] }, identity);
    expect(json).toMatchObject({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 5, model: 'sim-mini', usage: null });
    expect(json.choices[0]).toEqual({ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null });
  });

  it('writes id, type and name only on a tool call delta that has them', () => {
    const first = chunkJson(
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] } }] },
      identity,
    );
    const later = chunkJson({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] } }] }, identity);
    expect(first.choices[0]!.delta.tool_calls).toEqual([{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }]);
    expect(later.choices[0]!.delta.tool_calls).toEqual([{ index: 0, function: { arguments: '{"a"' } }]);
  });

  it('writes thinking deltas as reasoning_content, and the signature and redacted blocks as their own fields', () => {
    const deltaOf = (delta: Record<string, unknown>) =>
      chunkJson({ choices: [{ index: 0, delta: { tool_calls: [], ...delta } }] } as never, identity).choices[0]!.delta;
    expect(deltaOf({ thinking: 'Let me see.' })).toEqual({ reasoning_content: 'Let me see.' });
    expect(deltaOf({ thinking_signature: 'sig' })).toEqual({ thinking_signature: 'sig' });
    expect(deltaOf({ redacted_thinking: 'opaque' })).toEqual({ redacted_thinking: 'opaque' });
  });

  it('writes the usage chunk with empty choices', () => {
    const json = usageChunkJson({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }, identity, gateway);
    expect(json.choices).toEqual([]);
    expect(json.usage.total_tokens).toBe(3);
    expect(json.gateway).toEqual(gateway);
  });
});

describe('chatCompletionJson with thinking', () => {
  it('adds reasoning_content and the whole thinking blocks only to an answer that has them', () => {
    const response = (blocks: unknown[]) =>
      chatCompletionJson(
        {
          id: 'chatcmpl-1',
          model: 'claude',
          choices: [
            {
              index: 0,
              message: { content: 'Hi.', tool_calls: [], ...(blocks.length > 0 ? { thinking: { blocks } } : {}) },
              finish_reason: 'FINISH_REASON_STOP',
            },
          ],
        } as never,
        gateway,
      ).choices[0]!.message as Record<string, unknown>;
    const thought = response([{ thinking: { thinking: 'Greet.', signature: 'sig' } }, { redacted_thinking: { data: 'opaque' } }]);
    expect(thought.reasoning_content).toBe('Greet.');
    expect(thought.thinking_blocks).toEqual([
      { type: 'thinking', thinking: 'Greet.', signature: 'sig' },
      { type: 'redacted_thinking', data: 'opaque' },
    ]);
    expect(Object.keys(response([]))).not.toContain('reasoning_content');
  });
});
