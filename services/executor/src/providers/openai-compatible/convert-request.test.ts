import { describe, expect, it } from 'vitest';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import { openAiCompatibleModel } from '@gateway/testing';
import { toOpenAiRequest } from './convert-request.js';

const model = openAiCompatibleModel('http://127.0.0.1:1/v1');

describe('toOpenAiRequest', () => {
  it('converts every content part kind and keeps refusals', () => {
    const body = toOpenAiRequest(
      {
        messages: [
          {
            role: 'ROLE_USER',
            content: 'parts',
            tool_calls: [],
            parts: {
              parts: [
                { input_audio: { data: 'UklGRg==', format: 'wav' } },
                { file: { file_id: 'file-abc', filename: 'notes.pdf' } },
                { image_url: { url: 'data:image/png;base64,iVBO' } },
              ],
            },
          },
          {
            role: 'ROLE_ASSISTANT',
            content: 'parts',
            tool_calls: [],
            refusal: 'I cannot help with that.',
            parts: { parts: [{ refusal: 'I cannot help with that.' }] },
          },
        ],
        stop: [],
        tools: [],
      },
      model,
      false,
    );
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
          { type: 'file', file: { file_id: 'file-abc', filename: 'notes.pdf' } },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBO' } },
        ],
      },
      { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }], refusal: 'I cannot help with that.' },
    ]);
  });

  it('sends a system message split only for its cache breakpoints as one string, and other system parts as they came', () => {
    const system = (parts: Array<{ text: string; cache_control?: { type: string } }>) =>
      toOpenAiRequest({ messages: [{ role: 'ROLE_SYSTEM', content: 'parts', parts: { parts }, tool_calls: [] }], stop: [], tools: [] } as never, model, false)
        .messages[0]?.content;
    expect(system([{ text: 'You are Claude Code.' }, { text: 'Long rules.', cache_control: { type: 'ephemeral' } }])).toBe(
      'You are Claude Code.\n\nLong rules.',
    );
    expect(system([{ text: 'One.' }, { text: 'Two.' }])).toEqual([
      { type: 'text', text: 'One.' },
      { type: 'text', text: 'Two.' },
    ]);
  });

  it('sends nothing the caller did not set', () => {
    expect(
      toOpenAiRequest(
        { messages: [{ role: 'ROLE_USER', content: 'text', text: 'hi', tool_calls: [] }], stop: [], tools: [], metadata: {}, logit_bias: {} },
        model,
        false,
      ),
    ).toEqual({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
    });
  });

  it('rejects a tool whose parameters are not JSON, naming the field', () => {
    const convert = () =>
      toOpenAiRequest(
        {
          messages: [{ role: 'ROLE_USER', content: 'text', text: 'hi', tool_calls: [] }],
          stop: [],
          tools: [{ type: 'function', function: { name: 'broken', parameters_json: '{not json' } }],
        },
        model,
        false,
      );
    expect(convert).toThrow(GatewayError);
    try {
      convert();
    } catch (error) {
      expect(error).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason: 'invalid_request', param: 'tools[0].function.parameters' });
    }
  });

  it('drops thinking (the setting, the blocks of earlier turns, the betas) and keeps the text and calls of those turns', () => {
    const thinkingTurn = (parts: Array<Record<string, unknown>>) => ({
      role: 'ROLE_ASSISTANT' as const,
      content: 'parts' as const,
      parts: { parts },
      tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
    });
    const body = toOpenAiRequest(
      {
        messages: [
          { role: 'ROLE_USER', content: 'text', text: 'hi', tool_calls: [] },
          thinkingTurn([{ thinking: { thinking: 'hmm', signature: 'sig' } }, { text: 'Looking.' }, { tool_call_id: 'toolu_1' }]),
          { role: 'ROLE_TOOL', content: 'text', text: 'found', tool_call_id: 'toolu_1', tool_calls: [] },
          thinkingTurn([{ redacted_thinking: { data: 'opaque' } }]),
          { role: 'ROLE_TOOL', content: 'text', text: 'again', tool_call_id: 'toolu_1', tool_calls: [] },
        ],
        stop: [],
        tools: [],
        thinking: { type: 'enabled', budget_tokens: 2048 },
        anthropic_betas: { flags: ['interleaved-thinking-2025-05-14'] },
      },
      model,
      false,
    );
    const call = [{ id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }];
    expect(body.messages[1]).toEqual({ role: 'assistant', content: 'Looking.', tool_calls: call });
    expect(body.messages[3]).toEqual({ role: 'assistant', content: null, tool_calls: call });
    expect(JSON.stringify(body)).not.toMatch(/thinking|signature|opaque|interleaved/);
  });
});
