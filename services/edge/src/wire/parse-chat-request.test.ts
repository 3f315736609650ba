import { describe, expect, it } from 'vitest';
import { parseChatRequest } from './parse-chat-request.js';
import { RequestError } from '../request-error.js';

const base = { model: 'sim-mini', messages: [{ role: 'user', content: 'hi' }] };
/** A request of model `m` with this one message. */
const oneMessage = (message: unknown) => ({ model: 'm', messages: [message] });
/** A request of model `m` with one user message whose content is this one part. */
const onePart = (part: unknown) => oneMessage({ role: 'user', content: [part] });

function refusal(body: unknown): RequestError {
  try {
    parseChatRequest(body);
  } catch (error) {
    if (error instanceof RequestError) return error;
    throw error;
  }
  throw new Error('the body was accepted');
}

/** A JSON Schema `levels` objects deep (properties.a.properties.a...), built without recursion. */
function deeplyNested(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let level = 1; level < levels; level += 1) schema = { type: 'object', properties: { a: schema } };
  return schema;
}

describe('parseChatRequest', () => {
  it('converts a full request into the protobuf shape', () => {
    const parsed = parseChatRequest({
      ...base,
      messages: [
        { role: 'system', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } },
          ],
        },
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
    [
      oneMessage({ role: 'robot', content: 'x' }),
      'messages[0].role',
      "Invalid value for 'messages[0].role': 'robot'. Supported values are: 'system', 'developer', 'user', 'assistant', 'tool'.",
    ],
    [oneMessage({ role: 'user' }), 'messages[0].content', "Missing required parameter: 'messages[0].content'. A user message needs 'content'."],
    [oneMessage({ role: 'tool', content: 'x' }), 'messages[0].tool_call_id', "Missing required parameter: 'messages[0].tool_call_id'."],
    [{ ...base, temperature: 2.5 }, 'temperature', "Invalid value for 'temperature': 2.5 is above the maximum; it must be between 0 and 2."],
    [{ ...base, temperature: 'hot' }, 'temperature', "Invalid type for 'temperature': expected a number between 0 and 2, but got a string."],
    [{ ...base, top_p: -0.1 }, 'top_p', "Invalid value for 'top_p': -0.1 is below the minimum; it must be between 0 and 1."],
    [{ ...base, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', "Invalid 'stop': array too long. Expected an array with at most 4 strings, but got 5."],
    [{ ...base, max_tokens: 0 }, 'max_tokens', "Invalid value for 'max_tokens': 0 is below the minimum; it must be an integer between 1 and 2147483647."],
    [{ ...base, max_tokens: 1.5 }, 'max_tokens', "Invalid type for 'max_tokens': expected an integer between 1 and 2147483647, but got a number."],
    [
      { ...base, tools: [{ type: 'function', function: { name: 'bad name' } }] },
      'tools[0].function.name',
      "Invalid 'tools[0].function.name': string does not match pattern. Expected a string of 1 to 64 characters from a-z, A-Z, 0-9, underscores and dashes, but got 'bad name'.",
    ],
    [{ ...base, tool_choice: 'required' }, 'tool_choice', "Invalid value for 'tool_choice': 'required' is only allowed when 'tools' are specified."],
    [
      { ...base, tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'g' } } },
      'tool_choice.function.name',
      "Invalid value for 'tool_choice': the function 'g' is not among the functions in 'tools'.",
    ],
    [
      { ...base, stream_options: { include_usage: true } },
      'stream_options',
      "Invalid value for 'stream_options': 'stream_options' is only allowed when 'stream' is true.",
    ],
    [
      { ...base, response_format: { type: 'yaml' } },
      'response_format.type',
      "Invalid value for 'response_format.type': 'yaml'. Supported values are: 'text', 'json_object', 'json_schema'.",
    ],
    [{ ...base, n: 0 }, 'n', "Invalid value for 'n': 0 is below the minimum; it must be an integer between 1 and 128."],
    [{ ...base, presence_penalty: 3 }, 'presence_penalty', "Invalid value for 'presence_penalty': 3 is above the maximum; it must be between -2 and 2."],
    [
      { ...base, frequency_penalty: -2.5 },
      'frequency_penalty',
      "Invalid value for 'frequency_penalty': -2.5 is below the minimum; it must be between -2 and 2.",
    ],
    [{ ...base, seed: 1.5 }, 'seed', "Invalid type for 'seed': expected an integer between -9007199254740991 and 9007199254740991, but got a number."],
    [
      { ...base, max_completion_tokens: -3 },
      'max_completion_tokens',
      "Invalid value for 'max_completion_tokens': -3 is below the minimum; it must be an integer between 1 and 2147483647.",
    ],
    [{ ...base, stop: 7 }, 'stop', "Invalid type for 'stop': expected a string or an array of 1 to 4 strings, but got an integer."],
    [{ ...base, stop: ['a', 3] }, 'stop[1]', "Invalid type for 'stop[1]': expected a string, but got an integer."],
    [{ ...base, stream: 'yes' }, 'stream', "Invalid type for 'stream': expected a boolean, but got a string."],
    [
      { ...base, stream: true, stream_options: { include_usage: 1 } },
      'stream_options.include_usage',
      "Invalid type for 'stream_options.include_usage': expected a boolean, but got an integer.",
    ],
    [{ ...base, stream: true, stream_options: [] }, 'stream_options', "Invalid type for 'stream_options': expected an object, but got an array."],
    [{ ...base, top_logprobs: 3 }, 'top_logprobs', "Invalid value for 'top_logprobs': 'logprobs' must be true when 'top_logprobs' is set."],
    [
      { ...base, logprobs: true, top_logprobs: 21 },
      'top_logprobs',
      "Invalid value for 'top_logprobs': 21 is above the maximum; it must be an integer between 0 and 20.",
    ],
    [{ ...base, logit_bias: { abc: 1 } }, 'logit_bias.abc', "Invalid key in 'logit_bias': 'abc' is not a token id."],
    [{ ...base, logit_bias: { 50256: 101 } }, 'logit_bias.50256', "Invalid value for 'logit_bias.50256': expected a number from -100 to 100."],
    [{ ...base, metadata: { a: 1 } }, 'metadata.a', "Invalid type for 'metadata.a': expected a string, but got an integer."],
    [
      { ...base, metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
      'metadata',
      "Invalid 'metadata': at most 16 keys are allowed.",
    ],
    [
      { ...base, logit_bias: Object.fromEntries(Array.from({ length: 301 }, (_, i) => [String(i), 1])) },
      'logit_bias',
      "Invalid 'logit_bias': at most 300 tokens may be biased.",
    ],
    [{ ...base, user: 5 }, 'user', "Invalid type for 'user': expected a string, but got an integer."],
    [
      { ...base, reasoning_effort: 'extreme' },
      'reasoning_effort',
      "Invalid value for 'reasoning_effort': 'extreme'. Supported values are: 'minimal', 'low', 'medium', 'high'.",
    ],
    [
      { ...base, functions: [{ name: 'f' }], tools: [{ type: 'function', function: { name: 'f' } }] },
      'functions',
      "Invalid parameter: 'functions' and 'tools' cannot both be set; send the functions as 'tools'.",
    ],
    [{ ...base, functions: { name: 'f' } }, 'functions', "Invalid type for 'functions': expected an array of functions, but got an object."],
    [
      { ...base, functions: [{ name: 'f' }], function_call: 'required' },
      'function_call',
      `Invalid type for 'function_call': expected 'none', 'auto' or {"name": ...}, but got a string.`,
    ],
    [
      { ...base, functions: [{ name: 'f' }], function_call: 'auto', tool_choice: 'auto' },
      'function_call',
      "Invalid parameter: 'function_call' and 'tool_choice' cannot both be set; use 'tool_choice'.",
    ],
    [
      { ...base, functions: [{ name: 'a b' }] },
      'tools[0].function.name',
      "Invalid 'tools[0].function.name': string does not match pattern. Expected a string of 1 to 64 characters from a-z, A-Z, 0-9, underscores and dashes, but got 'a b'.",
    ],
    [
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'function', name: 'f', content: '1' },
        ],
      },
      'messages[1]',
      "Invalid 'messages[1]': a 'function' message must follow an assistant message with a 'function_call'.",
    ],
    [oneMessage({ role: 'function', content: '1' }), 'messages[0].name', "Missing required parameter: 'messages[0].name'."],
    [{ model: 'm', messages: 'hi' }, 'messages', "Invalid type for 'messages': expected an array of messages, but got a string."],
    [{ model: 'm', messages: ['hi'] }, 'messages[0]', "Invalid type for 'messages[0]': expected a message object, but got a string."],
    [oneMessage({ content: 'x' }), 'messages[0].role', "Missing required parameter: 'messages[0].role'."],
    [
      oneMessage({ role: 'assistant' }),
      'messages[0].content',
      "Missing required parameter: 'messages[0].content'. An assistant message needs 'content', 'tool_calls' or 'refusal'.",
    ],
    [
      oneMessage({ role: 'user', content: 5 }),
      'messages[0].content',
      "Invalid type for 'messages[0].content': expected a string or an array of content parts, but got an integer.",
    ],
    [oneMessage({ role: 'user', content: [] }), 'messages[0].content', "Invalid 'messages[0].content': an array of content parts must not be empty."],
    [onePart({ text: 'x' }), 'messages[0].content[0].type', "Missing required parameter: 'messages[0].content[0].type'."],
    [
      oneMessage({ role: 'system', content: [{ type: 'image_url', image_url: { url: 'https://a/b.png' } }] }),
      'messages[0].content[0].type',
      "Invalid value for 'messages[0].content[0].type': 'image_url'. Content parts of system messages may be: 'text'.",
    ],
    [onePart({ type: 'text' }), 'messages[0].content[0].text', "Missing required parameter: 'messages[0].content[0].text'."],
    [
      onePart({ type: 'image_url', image_url: { url: 'ftp://x' } }),
      'messages[0].content[0].image_url.url',
      "Invalid value for 'messages[0].content[0].image_url.url': expected an http(s) URL or a base64 data URL of an image.",
    ],
    [
      onePart({ type: 'image_url', image_url: { url: 'https://a/b.png', detail: 'ultra' } }),
      'messages[0].content[0].image_url.detail',
      "Invalid value for 'messages[0].content[0].image_url.detail': 'ultra'. Supported values are: 'auto', 'low', 'high'.",
    ],
    [onePart({ type: 'image_url' }), 'messages[0].content[0].image_url', "Missing required parameter: 'messages[0].content[0].image_url'."],
    [
      onePart({ type: 'input_audio', input_audio: { data: 'AAA', format: 'ogg' } }),
      'messages[0].content[0].input_audio.format',
      "Invalid value for 'messages[0].content[0].input_audio.format': 'ogg'. Supported values are: 'wav', 'mp3'.",
    ],
    [
      onePart({ type: 'file', file: {} }),
      'messages[0].content[0].file',
      "Invalid value for 'messages[0].content[0].file': one of 'file_id' or 'file_data' is required.",
    ],
    [oneMessage({ role: 'user', content: 'x', name: 3 }), 'messages[0].name', "Invalid type for 'messages[0].name': expected a string, but got an integer."],
    [
      oneMessage({ role: 'user', content: 'x', tool_calls: [] }),
      'messages[0].tool_calls',
      "Invalid parameter: 'messages[0].tool_calls' is only allowed on messages with role 'assistant'.",
    ],
    [
      oneMessage({ role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] }),
      'messages[0].tool_calls[0].id',
      "Missing required parameter: 'messages[0].tool_calls[0].id'.",
    ],
    [
      oneMessage({ role: 'assistant', tool_calls: [{ id: 'c', type: 'function' }] }),
      'messages[0].tool_calls[0].function',
      "Missing required parameter: 'messages[0].tool_calls[0].function'.",
    ],
    [
      oneMessage({ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: { a: 1 } } }] }),
      'messages[0].tool_calls[0].function.arguments',
      "Invalid type for 'messages[0].tool_calls[0].function.arguments': expected a string holding JSON, but got an object.",
    ],
    [
      oneMessage({ role: 'assistant', tool_calls: [{ id: 'c', type: 'code', function: { name: 'f', arguments: '{}' } }] }),
      'messages[0].tool_calls[0].type',
      "Invalid value for 'messages[0].tool_calls[0].type': 'code'. Supported values are: 'function'.",
    ],
    [{ ...base, tools: {} }, 'tools', "Invalid type for 'tools': expected an array of tools, but got an object."],
    [
      { ...base, tools: Array.from({ length: 129 }, (_, i) => ({ type: 'function', function: { name: `f${i}` } })) },
      'tools',
      "Invalid 'tools': array too long. Expected an array with at most 128 elements, but got 129.",
    ],
    [{ ...base, tools: [{ function: { name: 'f' } }] }, 'tools[0].type', "Missing required parameter: 'tools[0].type'."],
    [
      { ...base, tools: [{ type: 'retrieval', function: { name: 'f' } }] },
      'tools[0].type',
      "Invalid value for 'tools[0].type': 'retrieval'. Supported values are: 'function'.",
    ],
    [{ ...base, tools: [{ type: 'function' }] }, 'tools[0].function', "Missing required parameter: 'tools[0].function'."],
    [
      {
        ...base,
        tools: [
          { type: 'function', function: { name: 'f' } },
          { type: 'function', function: { name: 'f' } },
        ],
      },
      'tools[1].function.name',
      "Invalid 'tools[1].function.name': the function name 'f' is used by more than one tool.",
    ],
    [
      { ...base, tools: [{ type: 'function', function: { name: 'f', parameters: 'schema' } }] },
      'tools[0].function.parameters',
      "Invalid type for 'tools[0].function.parameters': expected a JSON Schema object, but got a string.",
    ],
    [
      { ...base, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'array' } } }] },
      'tools[0].function.parameters',
      `Invalid schema for 'tools[0].function.parameters': the top-level schema must be of type 'object', got "array".`,
    ],
    [
      { ...base, tools: [{ type: 'function', function: { name: 'f', strict: 'yes' } }] },
      'tools[0].function.strict',
      "Invalid type for 'tools[0].function.strict': expected a boolean, but got a string.",
    ],
    [
      { ...base, tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'always' },
      'tool_choice',
      "Invalid value for 'tool_choice': 'always'. Supported values are: 'none', 'auto', 'required'.",
    ],
    [
      { ...base, tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 3 },
      'tool_choice',
      `Invalid type for 'tool_choice': expected 'none', 'auto', 'required' or {"type": "function", "function": {"name": ...}}, but got an integer.`,
    ],
    [
      { ...base, tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function' } },
      'tool_choice.function',
      "Invalid type for 'tool_choice.function': expected an object with a name, but got null.",
    ],
    [{ ...base, parallel_tool_calls: 'no' }, 'parallel_tool_calls', "Invalid type for 'parallel_tool_calls': expected a boolean, but got a string."],
    [{ ...base, response_format: 'json' }, 'response_format', "Invalid type for 'response_format': expected an object, but got a string."],
    [{ ...base, response_format: { type: 'json_schema' } }, 'response_format.json_schema', "Missing required parameter: 'response_format.json_schema'."],
    [
      { ...base, response_format: { type: 'json_schema', json_schema: { name: 'a b' } } },
      'response_format.json_schema.name',
      "Invalid 'response_format.json_schema.name': expected 1 to 64 characters from a-z, A-Z, 0-9, underscores and dashes.",
    ],
    [
      { ...base, response_format: { type: 'json_schema', json_schema: { schema: {} } } },
      'response_format.json_schema.name',
      "Missing required parameter: 'response_format.json_schema.name'.",
    ],
    [{ ...base, model: '' }, 'model', "Invalid value for 'model': the model id must not be empty."],
  ])('refuses %j on %s', (body, param, message) => {
    const error = refusal(body);
    expect(error.status).toBe(400);
    expect(error.param).toBe(param);
    expect(error.message).toBe(message);
  });

  it('refuses a schema nested deeper than 128 levels (64 of properties), at any depth, with a 400 rather than a stack overflow', () => {
    expect(() => parseChatRequest({ ...base, tools: [{ type: 'function', function: { name: 'ok', parameters: deeplyNested(64) } }] })).not.toThrow();
    const cases: Array<[unknown, string]> = [
      [{ ...base, tools: [{ type: 'function', function: { name: 'deep', parameters: deeplyNested(65) } }] }, 'tools[0].function.parameters'],
      [{ ...base, tools: [{ type: 'function', function: { name: 'deep', parameters: deeplyNested(200_000) } }] }, 'tools[0].function.parameters'],
      [{ ...base, response_format: { type: 'json_schema', json_schema: { name: 's', schema: deeplyNested(100_000) } } }, 'response_format.json_schema.schema'],
    ];
    for (const [body, param] of cases) {
      const error = refusal(body);
      expect(error.status).toBe(400);
      expect(error.param).toBe(param);
      expect(error.message).toBe(`Invalid schema for '${param}': it nests deeper than 128 levels.`);
    }
  });

  it('refuses 100,000 metadata keys by counting no further than the limit', () => {
    const error = refusal({ ...base, metadata: Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, 'v'])) });
    expect(error.message).toBe("Invalid 'metadata': at most 16 keys are allowed.");
  });

  it('translates the deprecated functions, function_call and function messages into tools', () => {
    const parsed = parseChatRequest({
      model: 'm',
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { role: 'function', name: 'get_weather', content: '{"celsius":21}' },
      ],
      functions: [{ name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
      function_call: { name: 'get_weather' },
    });
    expect(parsed.legacyFunctions).toBe(true);
    expect(parsed.needsTools).toBe(true);
    expect(parsed.request.tools).toEqual([
      {
        type: 'function',
        function: { name: 'get_weather', description: 'Weather of a city', parameters_json: '{"type":"object","properties":{"city":{"type":"string"}}}' },
      },
    ]);
    expect(parsed.request.tool_choice).toEqual({ function_name: 'get_weather' });
    expect(parsed.request.parallel_tool_calls).toBe(false);
    expect(parsed.request.messages?.[1]?.tool_calls).toEqual([
      { id: 'call_function_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
    expect(parsed.request.messages?.[2]).toMatchObject({ role: 'ROLE_TOOL', tool_call_id: 'call_function_1', text: '{"celsius":21}' });
    expect(parseChatRequest({ ...base, functions: [{ name: 'f' }], function_call: 'none' }).request.tool_choice).toEqual({ mode: 'none' });
    expect(parseChatRequest({ ...base, tools: [{ type: 'function', function: { name: 'f' } }] }).legacyFunctions).toBeUndefined();
  });

  it("keeps Anthropic's cache_control on content parts, messages and tools, as LiteLLM and OpenRouter accept it", () => {
    const parsed = parseChatRequest({
      ...base,
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'the manual', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
        { role: 'user', content: 'the question', cache_control: { type: 'ephemeral' } },
      ],
      tools: [{ type: 'function', function: { name: 'f' }, cache_control: { type: 'ephemeral', ttl: '5m' } }],
    });
    expect(parsed.request.messages).toEqual([
      { role: 'ROLE_SYSTEM', parts: { parts: [{ text: 'the manual', cache_control: { type: 'ephemeral', ttl: '1h' } }] } },
      { role: 'ROLE_USER', text: 'the question', cache_control: { type: 'ephemeral' } },
    ]);
    expect(parsed.request.tools).toEqual([{ type: 'function', function: { name: 'f' }, cache_control: { type: 'ephemeral', ttl: '5m' } }]);
    expect(parseChatRequest({ ...base, messages: [{ role: 'user', content: 'hi', cache_control: null }] }).request.messages).toEqual([
      { role: 'ROLE_USER', text: 'hi' },
    ]);
  });

  it('refuses a cache_control other than ephemeral with a 5m or 1h ttl, naming the field', () => {
    const part = (cacheControl: unknown) => ({ ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: cacheControl }] }] });
    expect(refusal(part({ type: 'persistent' })).param).toBe('messages[0].content[0].cache_control.type');
    expect(refusal(part({ type: 'ephemeral', ttl: '2h' })).message).toBe(
      "Invalid value for 'messages[0].content[0].cache_control.ttl': '2h'. Supported values are: '5m', '1h'.",
    );
    expect(refusal(part('ephemeral')).param).toBe('messages[0].content[0].cache_control');
    expect(refusal({ ...base, tools: [{ type: 'function', function: { name: 'f' }, cache_control: {} }] }).param).toBe('tools[0].cache_control.type');
  });

  it('accepts harmless fields clients send by default', () => {
    const parsed = parseChatRequest({
      ...base,
      user: 'u',
      store: false,
      service_tier: 'auto',
      parallel_tool_calls: true,
      stream: false,
      stream_options: null,
      unknown_field: 1,
    });
    expect(parsed.stream).toBe(false);
    expect(parsed.request.user).toBe('u');
  });
});
