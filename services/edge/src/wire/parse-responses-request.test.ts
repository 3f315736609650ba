/**
 * The Responses request translated into the gateway's chat request: what each field and item
 * becomes, what is dropped by rule, and the 400s, named by their Responses field.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RequestError } from '../request-error.js';
import { flattenedName, parseResponsesRequest } from './parse-responses-request.js';
import { COMPACTED_HISTORY_PREFIX, COMPACTION_PROMPT, compactedSummary, compactionItem } from './responses-compaction.js';

/** The 400 a body is refused with. */
function refusal(body: unknown): RequestError {
  let caught: unknown;
  try {
    parseResponsesRequest(body);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(RequestError);
  return caught as RequestError;
}

const execCommand = {
  type: 'function',
  name: 'exec_command',
  description: 'Runs a command in a shell',
  strict: false,
  parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
};

/** A body shaped like the one Codex sends (also sent through the cluster by tests/e2e/responses.e2e.test.ts). */
const CODEX_BODY = JSON.parse(readFileSync(new URL('./fixtures/codex-request.json', import.meta.url), 'utf8')) as { tools: Array<{ parameters?: unknown }> };

describe('parseResponsesRequest', () => {
  it('reads a string input as one user message, after the instructions as a system message', () => {
    const { request, stream } = parseResponsesRequest({ model: 'm', instructions: 'Be brief.', input: 'Hello', max_output_tokens: 50, temperature: 0.5 });
    expect(request.messages).toEqual([
      { role: 'ROLE_SYSTEM', text: 'Be brief.' },
      { role: 'ROLE_USER', text: 'Hello' },
    ]);
    expect(request).toMatchObject({ max_tokens: 50, max_tokens_is_completion_tokens: true, temperature: 0.5 });
    expect(stream).toBe(false);
  });

  it("takes Codex's body: roles kept, namespace functions flattened, the hosted web_search dropped", () => {
    const parsed = parseResponsesRequest(CODEX_BODY);
    expect(parsed.request.messages?.map((message) => message.role)).toEqual(['ROLE_SYSTEM', 'ROLE_DEVELOPER', 'ROLE_DEVELOPER', 'ROLE_USER', 'ROLE_USER']);
    expect(parsed.request.messages?.[4]).toEqual({ role: 'ROLE_USER', parts: { parts: [{ text: 'Summarize this repository in one sentence.' }] } });
    expect(parsed.request.tools?.map((tool) => tool.function?.name)).toEqual(['exec_command', 'write_stdin', 'mcp__docs__lookup']);
    expect(parsed.request.tools?.[0]?.function?.parameters_json).toBe(JSON.stringify(CODEX_BODY.tools[0]!.parameters));
    expect(parsed.request.tool_choice).toEqual({ mode: 'auto' });
    expect(parsed).toMatchObject({ stream: true, needsTools: true });
    expect(parsed.responses.namespaced.get('mcp__docs__lookup')).toEqual({ namespace: 'mcp__docs', name: 'lookup' });
    // The response repeats the tools as the caller sent them.
    expect(parsed.responses.echo).toMatchObject({
      tools: CODEX_BODY.tools,
      store: false,
      parallel_tool_calls: true,
      reasoning: { effort: null, summary: 'auto' },
    });
  });

  it('turns function calls into the tool calls of the assistant message before them, outputs into tool messages, and drops reasoning', () => {
    const { request } = parseResponsesRequest({
      model: 'm',
      tools: [execCommand],
      input: [
        { role: 'user', content: 'List the files.' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Listing.' }] },
        { type: 'function_call', call_id: 'call_1', name: 'exec_command', arguments: '{"cmd":"ls"}' },
        { type: 'function_call', call_id: 'call_2', name: 'search', namespace: 'mcp_docs', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'README.md' },
        {
          type: 'function_call_output',
          call_id: 'call_2',
          output: [
            { type: 'input_text', text: 'found' },
            { type: 'input_image', image_url: 'https://x/y.png' },
          ],
        },
        { type: 'web_search_call', id: 'ws_1', status: 'completed' },
      ],
    });
    expect(request.messages).toEqual([
      { role: 'ROLE_USER', text: 'List the files.' },
      {
        role: 'ROLE_ASSISTANT',
        parts: { parts: [{ text: 'Listing.' }] },
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'exec_command', arguments: '{"cmd":"ls"}' } },
          { id: 'call_2', type: 'function', function: { name: 'mcp_docs__search', arguments: '{}' } },
        ],
      },
      { role: 'ROLE_TOOL', text: 'README.md', tool_call_id: 'call_1' },
      { role: 'ROLE_TOOL', text: 'found\n[input_image omitted: tool results reach the model as text]', tool_call_id: 'call_2' },
    ]);
  });

  it('maps text.format, reasoning effort and a named function choice', () => {
    const { request, needsJsonMode } = parseResponsesRequest({
      model: 'm',
      input: 'Facts about Oslo.',
      text: { format: { type: 'json_schema', name: 'facts', schema: { type: 'object', properties: { city: { type: 'string' } } }, strict: true } },
      reasoning: { effort: 'xhigh' },
      tools: [{ type: 'namespace', name: 'crm', description: 'CRM', tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }] }],
      tool_choice: { type: 'function', name: 'lookup' },
    });
    expect(needsJsonMode).toBe(true);
    expect(request.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'facts', schema_json: '{"type":"object","properties":{"city":{"type":"string"}}}', strict: true },
    });
    expect(request.reasoning_effort).toBe('high');
    expect(request.tool_choice).toEqual({ function_name: 'crm__lookup' });
  });

  it('offers a custom tool as a function of one string input, its grammar in the description, and reads back its calls', () => {
    const { request, responses } = parseResponsesRequest({
      model: 'm',
      tools: [
        {
          type: 'custom',
          name: 'apply_patch',
          description: 'Applies a patch.',
          format: { type: 'grammar', syntax: 'lark', definition: 'start: "*** Begin Patch"' },
        },
      ],
      tool_choice: { type: 'custom', name: 'apply_patch' },
      input: [
        { role: 'user', content: 'Fix the typo.' },
        { type: 'custom_tool_call', call_id: 'call_1', name: 'apply_patch', input: '*** Begin Patch' },
        { type: 'custom_tool_call_output', call_id: 'call_1', output: 'Done.' },
      ],
    });
    const fn = request.tools?.[0]?.function;
    expect(fn?.name).toBe('apply_patch');
    expect(JSON.parse(fn?.parameters_json ?? '')).toEqual({
      type: 'object',
      properties: { input: { type: 'string' } },
      required: ['input'],
      additionalProperties: false,
    });
    expect(fn?.description).toContain('Applies a patch.');
    expect(fn?.description).toContain('lark grammar:\nstart: "*** Begin Patch"');
    expect(request.tool_choice).toEqual({ function_name: 'apply_patch' });
    expect(responses.custom.has('apply_patch')).toBe(true);
    expect(request.messages?.slice(1)).toEqual([
      { role: 'ROLE_ASSISTANT', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } }] },
      { role: 'ROLE_TOOL', text: 'Done.', tool_call_id: 'call_1' },
    ]);
  });

  it('drops a tool_choice of auto when only hosted tools were offered', () => {
    const { request, needsTools } = parseResponsesRequest({ model: 'm', input: 'hi', tools: [{ type: 'web_search' }], tool_choice: 'auto' });
    expect(request.tools).toBeUndefined();
    expect(request.tool_choice).toBeUndefined();
    expect(needsTools).toBe(false);
  });

  it('keeps flattened names to 64 characters from a-z, 0-9, _ and -, distinct for distinct functions', () => {
    const long = flattenedName('a.very.long.namespace.name.that.goes.on', 'and_a_function_name_that_is_long_too');
    expect(long).toMatch(/^[a-zA-Z0-9_-]{64}$/);
    expect(flattenedName('a.very.long.namespace.name.that.goes.on', 'and_a_function_name_that_is_long_tool')).not.toBe(long);
  });

  it('refuses what is malformed with a 400 naming the Responses field', () => {
    expect(refusal({ model: 'm' })).toMatchObject({ status: 400, param: 'input', code: 'missing_required_parameter' });
    expect(refusal({ input: 'hi' })).toMatchObject({ param: 'model', code: 'missing_required_parameter' });
    expect(refusal({ model: 'm', input: 3 })).toMatchObject({ param: 'input', code: 'invalid_type' });
    expect(refusal({ model: 'm', input: [] })).toMatchObject({ param: 'input', code: 'empty_array' });
    expect(refusal({ model: 'm', input: [{ role: 'user', content: [{ type: 'video' }] }] })).toMatchObject({ param: 'input[0].content[0].type' });
    expect(refusal({ model: 'm', input: [{ role: 'tool', content: 'x' }] })).toMatchObject({ param: 'input[0].role' });
    const badName = refusal({ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'has space', parameters: {} }] });
    expect(badName).toMatchObject({ param: 'tools[0].name', code: 'invalid_function_name' });
    expect(badName.message).toContain("'tools[0].name'");
    expect(refusal({ model: 'm', input: 'hi', max_output_tokens: 0 })).toMatchObject({ param: 'max_output_tokens' });
    expect(refusal({ model: 'm', instructions: 5, input: 'hi' })).toMatchObject({ param: 'instructions' });
    expect(refusal({ model: 'm', input: [{ type: 'function_call', call_id: 'c', name: 'f' }] })).toMatchObject({ param: 'input[0].arguments' });
    expect(refusal({ model: 'm', input: [{ type: 'function_call_output', output: 'x' }] })).toMatchObject({ param: 'input[0].call_id' });
    expect(refusal({ model: 'm', input: [{ type: 'custom_tool_call', call_id: 'c', name: 'f' }] })).toMatchObject({
      param: 'input[0].input',
      code: 'invalid_type',
    });
    expect(refusal({ model: 'm', input: 'hi', text: { format: { type: 'json_schema', schema: {} } } })).toMatchObject({ param: 'text.format.name' });
  });

  it('refuses what needs stored state: previous_response_id, conversation, background, item references', () => {
    expect(refusal({ model: 'm', input: 'hi', previous_response_id: 'resp_1' })).toMatchObject({
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    });
    expect(refusal({ model: 'm', input: 'hi', conversation: 'conv_1' })).toMatchObject({ param: 'conversation', code: 'unsupported_parameter' });
    expect(refusal({ model: 'm', input: 'hi', background: true })).toMatchObject({ param: 'background' });
    expect(refusal({ model: 'm', input: [{ type: 'item_reference', id: 'msg_1' }] })).toMatchObject({ param: 'input[0].id', code: 'item_not_found' });
  });

  it("asks for a compaction's summary in place of a compaction_trigger, with the tools declared but none called", () => {
    const parsed = parseResponsesRequest({
      model: 'm',
      tools: [execCommand],
      input: [{ role: 'user', content: 'Rename parse.' }, { type: 'compaction_trigger' }],
    });
    expect(parsed.responses.compaction).toBe(true);
    expect(parsed.request.messages!.map((message) => message.role)).toEqual(['ROLE_USER', 'ROLE_USER']);
    expect(parsed.request.messages![1]!.text).toBe(COMPACTION_PROMPT);
    expect(parsed.request.tools).toHaveLength(1);
    expect(parsed.request.tool_choice).toEqual({ mode: 'none' });
    expect(parseResponsesRequest({ model: 'm', input: 'hi' }).responses.compaction).toBe(false);
  });

  it('expands a compaction item of this gateway into the summary it carries, and refuses any other', () => {
    const item = compactionItem('We renamed parse to parseRequest in two files.');
    expect(compactedSummary(item)).toBe('We renamed parse to parseRequest in two files.');
    const parsed = parseResponsesRequest({ model: 'm', input: [item, { role: 'user', content: 'Now the tests.' }] });
    expect(parsed.responses.compaction).toBe(false);
    expect(parsed.request.messages![0]).toEqual({ role: 'ROLE_USER', text: `${COMPACTED_HISTORY_PREFIX}We renamed parse to parseRequest in two files.` });
    expect(refusal({ model: 'm', input: [{ type: 'compaction', encrypted_content: 'gAAAAB-sealed-elsewhere' }] })).toMatchObject({
      status: 400,
      param: 'input[0].encrypted_content',
      code: 'invalid_compaction',
    });
    expect(refusal({ model: 'm', input: [{ type: 'compaction', encrypted_content: 'gwc1.not-base64-json' }] })).toMatchObject({ code: 'invalid_compaction' });
  });
});
