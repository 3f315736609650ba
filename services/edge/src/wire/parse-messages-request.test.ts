/**
 * A Messages body translated into the gateway's request: what each Anthropic field becomes, what
 * is dropped rather than refused (Claude Code's fields), and 400s named by the Messages field.
 */
import { describe, expect, it } from 'vitest';
import { parseMessagesRequest } from './parse-messages-request.js';
import { RequestError } from '../request-error.js';

const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

function refusal(body: unknown, options?: { countOnly?: boolean }): RequestError {
  try {
    parseMessagesRequest(body, options);
  } catch (error) {
    if (error instanceof RequestError) return error;
    throw error;
  }
  throw new Error('accepted');
}

/** Parses a Messages body for sim-full with max_tokens 64 and these fields. */
const ofSimFull = (fields: Record<string, unknown>) => parseMessagesRequest({ model: 'sim-full', max_tokens: 64, ...fields });

/**
 * The messages of a turn with tools: the user's question, the assistant's content blocks, and the
 * user's blocks back (tool results among them) when given.
 */
const toolTurn = (question: string, assistant: unknown[], reply?: unknown[]) => [
  { role: 'user', content: question },
  { role: 'assistant', content: assistant },
  ...(reply ? [{ role: 'user', content: reply }] : []),
];

describe('parseMessagesRequest', () => {
  it('folds system blocks and a system-role message into one leading system message', () => {
    const { request } = ofSimFull({
      system: [
        { type: 'text', text: 'You are Claude Code.' },
        { type: 'text', text: 'Be brief.' },
      ],
      messages: [
        { role: 'system', content: 'Reminder: tests first.' },
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      ],
    });
    expect(request.messages!.map((message) => message.role)).toEqual(['ROLE_SYSTEM', 'ROLE_USER']);
    expect(request.messages![0]!.text).toBe('You are Claude Code.\n\nBe brief.\n\nReminder: tests first.');
    expect(request.max_tokens).toBe(64);
  });

  it('keeps cache breakpoints: one system part per block, on content parts, tool results, tool calls and tools', () => {
    const { request } = ofSimFull({
      system: [
        { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.0' },
        { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'The long manual.', cache_control: { type: 'ephemeral', ttl: '1h' } },
      ],
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Reminder.', cache_control: { type: 'ephemeral', ttl: '5m' } }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Read this' },
            { type: 'document', source: { type: 'text', data: 'Notes.' }, cache_control: { type: 'ephemeral' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Reading.', cache_control: { type: 'ephemeral' } },
            { type: 'tool_use', id: 'toolu_1', name: 'read', input: {}, cache_control: { type: 'ephemeral', ttl: '1h' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'done', cache_control: { type: 'ephemeral' } },
            { type: 'text', text: 'Go on', cache_control: { type: 'ephemeral' } },
          ],
        },
      ],
      tools: [
        { name: 'read', input_schema: schema, cache_control: { type: 'ephemeral', ttl: '1h' } },
        { type: 'web_search_20250305', name: 'web_search', cache_control: { type: 'ephemeral' } },
      ],
    });
    const [system, user, assistant, tool, rest] = request.messages!;
    expect(system!.parts!.parts).toEqual([
      { text: 'x-anthropic-billing-header: cc_version=2.0' },
      { text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
      { text: 'The long manual.', cache_control: { type: 'ephemeral', ttl: '1h' } },
      { text: 'Reminder.', cache_control: { type: 'ephemeral', ttl: '5m' } },
    ]);
    expect(user!.parts!.parts).toEqual([{ text: 'Read this' }, { text: 'Notes.', cache_control: { type: 'ephemeral' } }]);
    expect(assistant!.parts!.parts).toEqual([{ text: 'Reading.', cache_control: { type: 'ephemeral' } }]);
    expect(assistant!.cache_control).toEqual({ type: 'ephemeral', ttl: '1h' });
    expect(tool).toMatchObject({ tool_call_id: 'toolu_1', text: 'done', cache_control: { type: 'ephemeral' } });
    expect(rest!.parts!.parts).toEqual([{ text: 'Go on', cache_control: { type: 'ephemeral' } }]);
    expect(request.tools).toHaveLength(1);
    expect(request.tools![0]!.cache_control).toEqual({ type: 'ephemeral', ttl: '1h' });
  });

  it('refuses an invalid cache_control, naming the Messages field', () => {
    const body = (control: unknown, where: 'system' | 'message' | 'tool') => ({
      model: 'sim-full',
      max_tokens: 64,
      system: [{ type: 'text', text: 'S', ...(where === 'system' ? { cache_control: control } : {}) }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'x' },
            { type: 'text', text: 'y', ...(where === 'message' ? { cache_control: control } : {}) },
          ],
        },
      ],
      tools: [{ name: 'read', input_schema: schema, ...(where === 'tool' ? { cache_control: control } : {}) }],
    });
    const cases: Array<[unknown, 'system' | 'message' | 'tool', string, string]> = [
      [{ type: 'persistent' }, 'system', 'system[0].cache_control.type', "Invalid value for 'system[0].cache_control.type': supported values are 'ephemeral'."],
      [
        { type: 'ephemeral', ttl: '10m' },
        'message',
        'messages[0].content[1].cache_control.ttl',
        "Invalid value for 'messages[0].content[1].cache_control.ttl': supported values are '5m' and '1h'.",
      ],
      ['ephemeral', 'tool', 'tools[0].cache_control', "Invalid type for 'tools[0].cache_control': expected an object, but got a string."],
    ];
    for (const [control, where, param, message] of cases) {
      const error = refusal(body(control, where));
      expect([error.status, error.param, error.message]).toEqual([400, param, message]);
    }
  });

  it('turns tool_use into tool calls and tool_result into tool messages before the rest of the user turn', () => {
    const { request } = ofSimFull({
      messages: toolTurn(
        'Weather in Oslo?',
        [
          { type: 'thinking', thinking: 'Use the tool.', signature: 'sig' },
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
        ],
        [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '3 degrees' }], is_error: false },
          { type: 'text', text: 'And tomorrow?' },
        ],
      ),
    });
    expect(request.messages!.map((message) => message.role)).toEqual(['ROLE_USER', 'ROLE_ASSISTANT', 'ROLE_TOOL', 'ROLE_USER']);
    expect(request.messages![1]).toMatchObject({
      parts: { parts: [{ thinking: { thinking: 'Use the tool.', signature: 'sig' } }, { text: 'Checking.' }, { tool_call_id: 'toolu_1' }] },
      tool_calls: [{ id: 'toolu_1', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
    });
    expect(request.messages![2]).toMatchObject({ tool_call_id: 'toolu_1', text: '3 degrees' });
  });

  it('keeps the text of tool results (images noted, errors marked) and documents; drops thinking-only turns', () => {
    const { request } = ofSimFull({
      messages: [
        { role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Notes.' } }] },
        { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'opaque' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_2', name: 'screenshot', input: {} }] },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_2',
              is_error: true,
              content: [
                { type: 'text', text: 'No display.' },
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } },
              ],
            },
          ],
        },
      ],
    });
    expect(request.messages!.map((message) => message.role)).toEqual(['ROLE_USER', 'ROLE_ASSISTANT', 'ROLE_TOOL']);
    expect(request.messages![0]!.parts!.parts![0]).toMatchObject({ text: 'Notes.' });
    expect(request.messages![1]!.tool_calls![0]).toMatchObject({ id: 'toolu_2', function: { name: 'screenshot', arguments: '{}' } });
    expect(request.messages![2]).toMatchObject({ tool_call_id: 'toolu_2', text: 'Error: No display.\n[image omitted]' });
  });

  it('maps images, tools, tool_choice, stop_sequences, metadata and thinking; drops server tools, top_k and unknown fields', () => {
    const parsed = ofSimFull({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
            { type: 'text', text: 'What is this?' },
          ],
        },
      ],
      tools: [
        { name: 'get_weather', description: 'Weather', input_schema: schema, cache_control: { type: 'ephemeral' } },
        { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
        { type: 'bash_20250124', name: 'bash' },
      ],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      stop_sequences: ['END'],
      metadata: { user_id: 'user-42' },
      temperature: 0.5,
      top_k: 5,
      thinking: { type: 'adaptive' },
      context_management: { edits: [] },
      output_config: { effort: 'high' },
      something_new: true,
    });
    const { request } = parsed;
    expect(parsed.needsVision).toBe(true);
    expect(request.messages![0]!.parts!.parts!.map((part) => part.image_url?.url ?? part.text)).toEqual([
      'data:image/png;base64,iVBORw0KGgo=',
      'https://example.com/a.png',
      'What is this?',
    ]);
    expect(request.tools?.map((tool) => tool.function?.name)).toEqual(['get_weather']);
    expect(request).toMatchObject({ stop: ['END'], user: 'user-42', temperature: 0.5, parallel_tool_calls: false });
    expect(request.tool_choice).toEqual({ mode: 'required' });
    expect(request.thinking).toEqual({ type: 'adaptive' });
    expect(request.anthropic_betas).toBeUndefined();
  });

  it('keeps thinking of every type, and refuses a malformed one naming the field', () => {
    const thinkingOf = (thinking: unknown) =>
      parseMessagesRequest({ model: 'm', max_tokens: 4096, messages: [{ role: 'user', content: 'x' }], thinking }).request.thinking;
    expect(thinkingOf({ type: 'enabled', budget_tokens: 2048 })).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(thinkingOf({ type: 'adaptive' })).toEqual({ type: 'adaptive' });
    expect(thinkingOf({ type: 'disabled' })).toEqual({ type: 'disabled' });
    expect(thinkingOf(null)).toBeUndefined();
    const cases: Array<[unknown, string]> = [
      ['on', 'thinking'],
      [{ type: 'enabled' }, 'thinking.budget_tokens'],
      [{ type: 'enabled', budget_tokens: 1.5 }, 'thinking.budget_tokens'],
      [{ type: 'sometimes' }, 'thinking.type'],
      [{}, 'thinking.type'],
    ];
    for (const [thinking, param] of cases) {
      const error = refusal({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'x' }], thinking });
      expect([error.status, error.param]).toEqual([400, param]);
    }
  });

  it('keeps thinking and redacted thinking blocks in their place among text and tool uses, breakpoints and system included', () => {
    const { request } = parseMessagesRequest({
      model: 'm',
      max_tokens: 4096,
      system: 'Be brief.',
      messages: toolTurn(
        'Weather and time in Oslo?',
        [
          { type: 'thinking', thinking: 'Two tools.', signature: 'sig-1' },
          { type: 'redacted_thinking', data: 'opaque' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
          { type: 'text', text: 'And the time.', cache_control: { type: 'ephemeral' } },
          { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
        ],
        [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '3 degrees' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: '14:05' },
        ],
      ),
    });
    expect(request.messages![2]!.parts!.parts).toEqual([
      { thinking: { thinking: 'Two tools.', signature: 'sig-1' } },
      { redacted_thinking: { data: 'opaque' } },
      { tool_call_id: 'toolu_1' },
      { text: 'And the time.', cache_control: { type: 'ephemeral' } },
      { tool_call_id: 'toolu_2' },
    ]);
    expect(request.messages![2]!.text).toBeUndefined();
    expect(request.messages![2]!.tool_calls!.map((call) => call.id)).toEqual(['toolu_1', 'toolu_2']);
    const bad = refusal({
      model: 'm',
      max_tokens: 8,
      messages: toolTurn('x', [
        { type: 'thinking', thinking: 'x' },
        { type: 'text', text: 'y' },
      ]),
    });
    expect([bad.status, bad.param]).toEqual([400, 'messages[1].content[0].signature']);
  });

  it("passes the anthropic-beta header's flags, from one header or several", () => {
    const betasOf = (header: string | string[]) =>
      parseMessagesRequest({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }, { headers: { 'anthropic-beta': header } }).request
        .anthropic_betas;
    expect(betasOf('interleaved-thinking-2025-05-14, fine-grained-tool-streaming-2025-05-14')).toEqual({
      flags: ['interleaved-thinking-2025-05-14', 'fine-grained-tool-streaming-2025-05-14'],
    });
    expect(betasOf(['a-1', 'b-2,c-3'])).toEqual({ flags: ['a-1', 'b-2', 'c-3'] });
    expect(betasOf(' , ')).toBeUndefined();
  });

  it('maps every tool_choice, and falls back to auto when the named tool was dropped', () => {
    const tools = [
      { name: 'get_weather', input_schema: schema },
      { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' },
    ];
    const choiceOf = (toolChoice: unknown) =>
      parseMessagesRequest({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'x' }], tools, tool_choice: toolChoice }).request.tool_choice;
    expect(choiceOf({ type: 'tool', name: 'get_weather' })).toEqual({ function_name: 'get_weather' });
    expect(choiceOf({ type: 'tool', name: 'str_replace_based_edit_tool' })).toEqual({ mode: 'auto' });
    expect(choiceOf({ type: 'any' })).toEqual({ mode: 'required' });
    expect(choiceOf({ type: 'none' })).toEqual({ mode: 'none' });
    expect(choiceOf({ type: 'auto' })).toEqual({ mode: 'auto' });
  });

  it('requires max_tokens except for a count, and names the Messages field of a 400', () => {
    expect(refusal({ model: 'm', messages: [{ role: 'user', content: 'x' }] })).toMatchObject({ status: 400, param: 'max_tokens' });
    expect(parseMessagesRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, { countOnly: true }).request.max_tokens).toBeUndefined();
    expect(refusal({ max_tokens: 8, messages: [] })).toMatchObject({ param: 'model' });
    expect(refusal({ model: 'm', max_tokens: 8 })).toMatchObject({ param: 'messages' });
    expect(refusal({ model: 'm', max_tokens: 8, messages: [{ role: 'robot', content: 'x' }] })).toMatchObject({ param: 'messages[0].role' });
    expect(refusal({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'x' }], stop_sequences: ['a', 'b', 'c', 'd', 'e'] })).toMatchObject({
      param: 'stop_sequences',
    });
    const badImage = refusal({
      model: 'm',
      max_tokens: 8,
      system: 'S',
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }],
    });
    expect(badImage).toMatchObject({ status: 400, param: 'messages[0].content[0].source.type' });
    expect(refusal('not an object')).toMatchObject({ status: 400, code: 'invalid_body' });
    const longName = `mcp__${'x'.repeat(70)}`;
    const tools = [
      { type: 'web_search_20250305', name: 'web_search' },
      { name: longName, input_schema: schema },
    ];
    const badTool = refusal({ model: 'm', max_tokens: 8, system: 'S', messages: [{ role: 'user', content: 'x' }], tools });
    expect(badTool).toMatchObject({ status: 400, param: 'tools[1].name' });
    expect(badTool.message).toContain("'tools[1].name'");
    const badCall = refusal({
      model: 'm',
      max_tokens: 8,
      system: 'S',
      messages: toolTurn('x', [
        { type: 'text', text: 'Calling.' },
        { type: 'tool_use', id: 'toolu_1', name: 42, input: {} },
      ]),
    });
    expect(badCall).toMatchObject({ status: 400, param: 'messages[1].content[1].name' });
  });
});
