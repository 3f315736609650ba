import { describe, expect, it } from 'vitest';
import { parseChatRequest } from './parse-chat-request.js';
import { RequestError } from './request-error.js';

const base = { model: 'sim-mini', messages: [{ role: 'user', content: 'hi' }] };

function refusal(body: unknown): RequestError {
  try {
    parseChatRequest(body);
  } catch (error) {
    if (error instanceof RequestError) return error;
    throw error;
  }
  throw new Error('the body was accepted');
}

describe('parseChatRequest', () => {
  it('converts a full request into the protobuf shape', () => {
    const parsed = parseChatRequest({
      ...base,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'done' },
      ],
      temperature: 0,
      stop: 'END',
      max_completion_tokens: 10,
      seed: 42,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
      stream: true,
      stream_options: { include_usage: true },
      store: true,
      metadata: { team: 'a' },
    });
    expect(parsed.stream).toBe(true);
    expect(parsed.includeUsage).toBe(true);
    expect(parsed.needsVision).toBe(true);
    expect(parsed.needsTools).toBe(true);
    expect(parsed.request.temperature).toBe(0);
    expect(parsed.request.stop).toEqual(['END']);
    expect(parsed.request.max_tokens).toBe(10);
    expect(parsed.request.max_tokens_is_completion_tokens).toBe(true);
    expect(parsed.request.messages![0]).toEqual({ role: 'ROLE_SYSTEM', text: 'be brief' });
    expect(parsed.request.messages![1]!.parts!.parts![1]).toEqual({ image_url: { url: 'https://example.com/a.png', detail: 'low' } });
    expect(parsed.request.messages![2]!.tool_calls![0]!.function).toEqual({ name: 'f', arguments: '{}' });
    expect(parsed.request.messages![3]!.tool_call_id).toBe('call_1');
    expect(parsed.request.tools![0]!.function!.parameters_json).toBe('{"type":"object","properties":{}}');
    expect(parsed.request.tool_choice).toEqual({ function_name: 'f' });
  });

  it.each([
    [[], null, 'The request body must be a JSON object, but got an array.'],
    [{ messages: base.messages }, 'model', "Missing required parameter: 'model'."],
    [{ model: 3, messages: base.messages }, 'model', "Invalid type for 'model': expected a string, but got an integer."],
    [{ model: 'm' }, 'messages', "Missing required parameter: 'messages'."],
    [{ model: 'm', messages: [] }, 'messages', "Invalid 'messages': empty array. Expected an array with at least 1 message."],
    [{ model: 'm', messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role', "Invalid value for 'messages[0].role': 'robot'. Supported values are: 'system', 'developer', 'user', 'assistant', 'tool'."],
    [{ model: 'm', messages: [{ role: 'user' }] }, 'messages[0].content', "Missing required parameter: 'messages[0].content'. A user message needs 'content'."],
    [{ model: 'm', messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id', "Missing required parameter: 'messages[0].tool_call_id'."],
    [{ ...base, temperature: 2.5 }, 'temperature', "Invalid value for 'temperature': 2.5 is above the maximum; it must be between 0 and 2."],
    [{ ...base, temperature: 'hot' }, 'temperature', "Invalid type for 'temperature': expected a number between 0 and 2, but got a string."],
    [{ ...base, top_p: -0.1 }, 'top_p', "Invalid value for 'top_p': -0.1 is below the minimum; it must be between 0 and 1."],
    [{ ...base, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', "Invalid 'stop': array too long. Expected an array with at most 4 strings, but got 5."],
    [{ ...base, max_tokens: 0 }, 'max_tokens', "Invalid value for 'max_tokens': 0 is below the minimum; it must be an integer between 1 and 2147483647."],
    [{ ...base, max_tokens: 1.5 }, 'max_tokens', "Invalid type for 'max_tokens': expected an integer between 1 and 2147483647, but got a number."],
    [{ ...base, tools: [{ type: 'function', function: { name: 'bad name' } }] }, 'tools[0].function.name', "Invalid 'tools[0].function.name': string does not match pattern. Expected a string of 1 to 64 characters from a-z, A-Z, 0-9, underscores and dashes, but got 'bad name'."],
    [{ ...base, tool_choice: 'required' }, 'tool_choice', "Invalid value for 'tool_choice': 'required' is only allowed when 'tools' are specified."],
    [{ ...base, tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'g' } } }, 'tool_choice.function.name', "Invalid value for 'tool_choice': the function 'g' is not among the functions in 'tools'."],
    [{ ...base, stream_options: { include_usage: true } }, 'stream_options', "Invalid value for 'stream_options': 'stream_options' is only allowed when 'stream' is true."],
    [{ ...base, response_format: { type: 'yaml' } }, 'response_format.type', "Invalid value for 'response_format.type': 'yaml'. Supported values are: 'text', 'json_object', 'json_schema'."],
  ])('refuses %j on %s', (body, param, message) => {
    const error = refusal(body);
    expect(error.status).toBe(400);
    expect(error.param).toBe(param);
    expect(error.message).toBe(message);
  });

  it('accepts harmless fields clients send by default', () => {
    const parsed = parseChatRequest({ ...base, user: 'u', store: false, service_tier: 'auto', parallel_tool_calls: true, stream: false, stream_options: null, unknown_field: 1 });
    expect(parsed.stream).toBe(false);
    expect(parsed.request.user).toBe('u');
  });
});
