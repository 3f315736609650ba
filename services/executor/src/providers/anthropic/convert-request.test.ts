import { describe, expect, it } from 'vitest';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { ChatRequestOutput, MessageOutput } from '@gateway/proto';
import { anthropicModel } from '@gateway/testing';
import { toAnthropicRequest } from './convert-request.js';

const model = anthropicModel('http://127.0.0.1:1');

function request(extra: Partial<ChatRequestOutput>): ChatRequestOutput {
  return { messages: [{ role: 'ROLE_USER', content: 'text', text: 'Hi', tool_calls: [] }], stop: [], tools: [], ...extra };
}

/** A message of `role` whose content is `parts`, with whatever else the test sets. */
function withParts(role: MessageOutput['role'], parts: NonNullable<MessageOutput['parts']>['parts'], extra: Partial<MessageOutput> = {}): MessageOutput {
  return { role, content: 'parts', tool_calls: [], parts: { parts }, ...extra };
}

/** The Messages API body of a whole request with the given fields. */
function bodyOf(extra: Partial<ChatRequestOutput>): ReturnType<typeof toAnthropicRequest> {
  return toAnthropicRequest(request(extra), model, false);
}

function failureOf(convert: () => unknown): GatewayError | undefined {
  try {
    convert();
  } catch (error) {
    return error as GatewayError;
  }
  return undefined;
}

describe('toAnthropicRequest', () => {
  it('sends PDFs as documents, tool results with parts as blocks, and drops empty messages', () => {
    const body = bodyOf({
      messages: [
        withParts('ROLE_USER', [{ text: 'Summarize' }, { file: { file_data: 'data:application/pdf;base64,JVBERi0x', filename: 'a.pdf' } }]),
        { role: 'ROLE_ASSISTANT', content: 'text', text: '', tool_calls: [{ id: 'toolu_9', type: 'function', function: { name: 'render', arguments: '' } }] },
        withParts('ROLE_TOOL', [{ text: 'Rendered:' }, { image_url: { url: 'data:image/webp;base64,UklGR' } }], { tool_call_id: 'toolu_9' }),
        { role: 'ROLE_ASSISTANT', content: 'text', text: '', tool_calls: [] },
        { role: 'ROLE_USER', content: 'text', text: 'Thanks', tool_calls: [] },
      ],
    });
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Summarize' },
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' } },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'render', input: {} }] },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_9',
            content: [
              { type: 'text', text: 'Rendered:' },
              { type: 'image', source: { type: 'base64', media_type: 'image/webp', data: 'UklGR' } },
            ],
          },
          { type: 'text', text: 'Thanks' },
        ],
      },
    ]);
  });

  it('sends the instructions of a system-only conversation as the user turn, since the Messages API needs one', () => {
    const body = bodyOf({
      messages: [
        { role: 'ROLE_SYSTEM', content: 'text', text: 'Name three rivers.', tool_calls: [] },
        { role: 'ROLE_DEVELOPER', content: 'text', text: 'One line.', tool_calls: [] },
      ],
    });
    expect(body.messages).toEqual([{ role: 'user', content: 'Name three rivers.\n\nOne line.' }]);
    expect(body).not.toHaveProperty('system');
    const withUser = bodyOf({
      messages: [
        { role: 'ROLE_SYSTEM', content: 'text', text: 'Be brief.', tool_calls: [] },
        { role: 'ROLE_USER', content: 'text', text: 'Hi', tool_calls: [] },
      ],
    });
    expect(withUser.system).toBe('Be brief.');
    expect(withUser.messages).toEqual([{ role: 'user', content: 'Hi' }]);
  });

  it('turns parallel_tool_calls: false into disable_parallel_tool_use, and sends no tool_choice without tools', () => {
    const tools = [{ type: 'function', function: { name: 'lookup' } }];
    expect(bodyOf({ tools, parallel_tool_calls: false }).tool_choice).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    });
    expect(bodyOf({ tools, tool_choice: { choice: 'function_name', function_name: 'lookup' }, parallel_tool_calls: false }).tool_choice).toEqual({
      type: 'tool',
      name: 'lookup',
      disable_parallel_tool_use: true,
    });
    expect(bodyOf({ tool_choice: { choice: 'mode', mode: 'auto' } })).not.toHaveProperty('tool_choice');
  });

  it('forwards cache breakpoints on system blocks, content parts, whole messages and tools', () => {
    const body = bodyOf({
      messages: [
        { role: 'ROLE_SYSTEM', content: 'text', text: 'You are terse.', tool_calls: [] },
        { role: 'ROLE_SYSTEM', content: 'text', text: 'The manual: ...', tool_calls: [], cache_control: { type: 'ephemeral', ttl: '1h' } },
        withParts('ROLE_USER', [{ text: 'The document', cache_control: { type: 'ephemeral' } }, { text: 'Question?' }]),
        { role: 'ROLE_ASSISTANT', content: 'text', text: 'Answer.', tool_calls: [], cache_control: { type: 'ephemeral', ttl: '5m' } },
        { role: 'ROLE_USER', content: 'text', text: 'More?', tool_calls: [] },
      ],
      tools: [
        { type: 'function', function: { name: 'first' } },
        { type: 'function', function: { name: 'last' }, cache_control: { type: 'ephemeral', ttl: '1h' } },
      ],
    });
    expect(body.system).toEqual([
      { type: 'text', text: 'You are terse.' },
      { type: 'text', text: 'The manual: ...', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'The document', cache_control: { type: 'ephemeral' } },
          { type: 'text', text: 'Question?' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Answer.', cache_control: { type: 'ephemeral', ttl: '5m' } }] },
      { role: 'user', content: 'More?' },
    ]);
    expect(body.tools).toEqual([
      { name: 'first', input_schema: { type: 'object', properties: {} } },
      { name: 'last', input_schema: { type: 'object', properties: {} }, cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
    // Without a breakpoint, system stays one string.
    expect(bodyOf({ messages: [{ role: 'ROLE_SYSTEM', content: 'text', text: 'A', tool_calls: [] }, ...request({}).messages!] }).system).toBe('A');
  });

  it("keeps a system message's parts as separate blocks when their breakpoints sit on parts (Claude Code's three system blocks)", () => {
    const body = bodyOf({
      messages: [
        withParts('ROLE_SYSTEM', [
          { text: 'x-anthropic-billing-header: cc_version=2.0' },
          { text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
          { text: '' },
          { text: 'The long manual.', cache_control: { type: 'ephemeral', ttl: '1h' } },
        ]),
        ...request({}).messages!,
      ],
    });
    expect(body.system).toEqual([
      { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.0' },
      { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'The long manual.', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
  });

  it("puts a tool message's breakpoint on its tool_result block", () => {
    const body = bodyOf({
      messages: [
        { role: 'ROLE_USER', content: 'text', text: 'Look it up', tool_calls: [] },
        { role: 'ROLE_ASSISTANT', content: 'text', text: '', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
        { role: 'ROLE_TOOL', content: 'text', text: 'found', tool_call_id: 'toolu_1', tool_calls: [], cache_control: { type: 'ephemeral' } },
      ],
    });
    expect(body.messages.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'found', cache_control: { type: 'ephemeral' } }],
    });
  });

  it('refuses what the Messages API cannot do, naming the field', () => {
    const cases: Array<[Partial<ChatRequestOutput>, string]> = [
      [{ n: 2 }, 'n'],
      [{ response_format: { type: 'json_object' } }, 'response_format'],
      [{ messages: [withParts('ROLE_USER', [{ input_audio: { data: 'UklGRg==', format: 'wav' } }])] }, 'messages[0].content[0].input_audio'],
      [{ messages: [withParts('ROLE_USER', [{ file: { file_id: 'file-abc' } }])] }, 'messages[0].content[0].file'],
      [{ messages: [withParts('ROLE_USER', [{ image_url: { url: 'ftp://example.com/a.png' } }])] }, 'messages[0].content[0].image_url.url'],
      [{ messages: [{ role: 'ROLE_TOOL', content: 'text', text: 'x', tool_calls: [] }] }, 'messages[0].tool_call_id'],
      [{ tools: [{ type: 'function', function: { name: 'broken', parameters_json: '{not json' } }] }, 'tools[0].function.parameters'],
      [
        {
          messages: [withParts('ROLE_USER', [{ text: 'x', cache_control: { type: 'ephemeral', ttl: '2h' } }])],
        },
        'messages[0].content[0].cache_control.ttl',
      ],
      [{ tools: [{ type: 'function', function: { name: 'lookup' }, cache_control: { type: 'persistent' } }] }, 'tools[0].cache_control.type'],
    ];
    for (const [extra, param] of cases) {
      const failure = failureOf(() => bodyOf(extra));
      expect(failure).toBeInstanceOf(GatewayError);
      expect(failure).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, param });
    }
  });
});
