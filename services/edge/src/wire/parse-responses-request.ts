/**
 * Translates a body of OpenAI's Responses API (POST /v1/responses) into the gateway's own request:
 * the chat-completions body it means, validated and converted by the one chat parser
 * (parse-chat-request.ts), so every provider and the simulated models answer it, and every rule of
 * that parser holds. A 400 of that parser is renamed back to the Responses field it came from
 * (`messages[2].content` becomes `input[3].content`, `max_completion_tokens` `max_output_tokens`).
 *
 * An agent must work as it is, so what an upstream cannot use is translated or dropped, never
 * refused (the rules, as services/edge/README.md documents them):
 * - `instructions` becomes a leading system message;
 * - `input` items: messages keep their role; `function_call` and `custom_tool_call` items join
 *   the assistant message before them as tool calls; their outputs become tool messages (the text
 *   of their parts; other parts are noted as omitted); `reasoning` items and the items of hosted
 *   tools (web search, shell, ...) are dropped;
 * - `tools`: functions as they are; a custom tool as a function of one string `input` (its grammar
 *   told in the description), its calls answered as `custom_tool_call` items; a `namespace` tool's
 *   tools flattened to `<namespace>__<name>` (mapped back to `name` and `namespace` on output);
 *   every other tool type (hosted tools such as `web_search`) dropped; a `tool_choice` naming a
 *   dropped tool becomes `auto`;
 * - `text.format` becomes `response_format`, `max_output_tokens` `max_completion_tokens`,
 *   `reasoning.effort` `reasoning_effort` (`none` dropped, `xhigh` read as `high`);
 * - `store` and `previous_response_id` are the store's (responses-store.ts: the earlier
 *   conversation is put before `input` before this parser sees the body); `include`,
 *   `prompt_cache_key`, `safety_identifier`, `truncation`, `client_metadata` and the like are
 *   accepted and unused;
 * - compaction (responses-compaction.ts): a `compaction_trigger` item asks the model for a summary
 *   (no tool is called), a `compaction` item this gateway made is expanded into its summary.
 * Refused: what cannot be honoured without other stored state (an unresolved `previous_response_id`, `conversation`,
 * `background`, `prompt` templates, `item_reference` items) and what is malformed.
 *
 * One piece: the whole translation of one API's body, a function per item and field, and the
 * renaming of the chat parser's errors, which needs the positions each of them kept.
 */
import { createHash } from 'node:crypto';
import { type ParsedChatRequest, parseChatRequest } from './parse-chat-request.js';
import { COMPACTED_HISTORY_PREFIX, COMPACTION_PROMPT, compactedSummary } from './responses-compaction.js';
import { invalid, RequestError } from '../request-error.js';
import { type FieldSource, given, isObject, type Json, type JsonObject, kindOf, renamedError, wrongType } from './translated-request.js';

/** A function offered inside a `namespace` tool, under the flattened name the upstream saw. */
export interface NamespacedFunction {
  namespace: string;
  name: string;
}

/** What the Responses renderers need beside the gateway's request. */
export interface ResponsesContext {
  /** Flattened tool name -> the namespace and name a `function_call` item carries. */
  namespaced: ReadonlyMap<string, NamespacedFunction>;
  /** The (flattened) names of custom tools: their calls are `custom_tool_call` items with the raw `input`. */
  custom: ReadonlySet<string>;
  /** The request's fields a Response object repeats (`instructions`, `tools`, `temperature`, ...). */
  echo: JsonObject;
  /** The input asks for a compaction (a `compaction_trigger` item): the answer is one `compaction` item. */
  compaction: boolean;
}

/** A Responses request: the gateway's request, and what its answer repeats and maps back. */
export interface ParsedResponsesRequest extends ParsedChatRequest {
  responses: ResponsesContext;
}

/** The chat body being built, and where each of its fields came from (chat param -> Responses param). */
interface Translation {
  messages: JsonObject[];
  tools: JsonObject[];
  sources: FieldSource[];
  namespaced: Map<string, NamespacedFunction>;
  custom: Set<string>;
  compaction: boolean;
}

/** The longest flattened name an upstream accepts (OpenAI's limit on function names). */
const MAX_FUNCTION_NAME = 64;
/** Top-level fields whose Responses name differs from the chat one. */
const RENAMED_FIELDS: readonly FieldSource[] = [
  ['max_completion_tokens', 'max_output_tokens'],
  ['response_format.json_schema', 'text.format'],
  ['response_format', 'text.format'],
  ['reasoning_effort', 'reasoning.effort'],
  ['tool_choice.function.name', 'tool_choice.name'],
  ['messages', 'input'],
];

/**
 * What a request without stored state cannot mean: refused with what to send instead. A
 * `previous_response_id` the store resolved (responses-store.ts) is gone from the body by now:
 * one still here was not resolved.
 */
function refuseStateful(body: JsonObject): void {
  if (given(body.previous_response_id)) {
    throw new RequestError(400, `Previous response with id '${String(body.previous_response_id).slice(0, 64)}' not found.`, {
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    });
  }
  const unsupported: ReadonlyArray<readonly [string, string]> = [
    ['conversation', "Conversations are not stored by this gateway: send the whole conversation in 'input'."],
    ['prompt', "Prompt templates are not stored by this gateway: send the prompt in 'instructions' and 'input'."],
  ];
  for (const [field, why] of unsupported) {
    if (given(body[field])) throw invalid(field, `Unsupported parameter: '${field}'. ${why}`, 'unsupported_parameter');
  }
  if (body.background === true)
    throw invalid('background', "Unsupported parameter: 'background'. Responses do not run in the background on this gateway.", 'unsupported_parameter');
}

/** A namespaced function's flattened name: `<namespace>__<name>`, kept to the characters and length upstreams accept. */
export function flattenedName(namespace: string, name: string): string {
  const flat = `${namespace}__${name}`.replace(/[^a-zA-Z0-9_-]/g, '_');
  if (flat.length <= MAX_FUNCTION_NAME) return flat;
  const digest = createHash('sha256').update(`${namespace}\u0000${name}`).digest('hex').slice(0, 8);
  return `${flat.slice(0, MAX_FUNCTION_NAME - 9)}_${digest}`;
}

/** A function tool in the chat shape. */
function chatFunction(tool: JsonObject, name: Json): JsonObject {
  const fn: JsonObject = { name };
  for (const field of ['description', 'parameters', 'strict'] as const) if (given(tool[field])) fn[field] = tool[field];
  return { type: 'function', function: fn };
}

/**
 * A custom tool (free-form text input, optionally held to a grammar) as a function of one string
 * parameter, `input`; its grammar, which chat upstreams cannot enforce, is told in the description.
 */
function customFunction(tool: JsonObject, name: string, out: Translation): JsonObject {
  out.custom.add(name);
  const format = isObject(tool.format) && tool.format.type === 'grammar' ? tool.format : undefined;
  const description = [
    typeof tool.description === 'string' ? tool.description : '',
    "Pass the tool's raw input as the string `input`.",
    format ? `The input must match this ${String(format.syntax)} grammar:\n${String(format.definition)}` : '',
  ];
  return {
    type: 'function',
    function: {
      name,
      description: description.filter(Boolean).join('\n\n'),
      parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'], additionalProperties: false },
    },
  };
}

/** One function or custom tool under the chat name it is offered by. */
function addTool(tool: JsonObject, chatName: string, param: string, out: Translation): void {
  if (typeof tool.name !== 'string') throw wrongType(`${param}.name`, 'a string', tool.name ?? null);
  out.sources.push([`tools[${out.tools.length}].function`, param], [`tools[${out.tools.length}]`, param]);
  out.tools.push(tool.type === 'custom' ? customFunction(tool, chatName, out) : chatFunction(tool, chatName));
}

/** `tools`: functions and custom tools kept, a namespace's flattened, every other type dropped. */
function translateTools(value: Json, out: Translation): void {
  if (!given(value)) return;
  if (!Array.isArray(value)) throw wrongType('tools', 'an array of tools', value);
  value.forEach((tool, index) => {
    const param = `tools[${index}]`;
    if (!isObject(tool)) throw wrongType(param, 'a tool object', tool);
    if (typeof tool.type !== 'string') throw wrongType(`${param}.type`, 'a string', tool.type ?? null);
    if (tool.type === 'function' || tool.type === 'custom') {
      addTool(tool, tool.name as string, param, out);
    } else if (tool.type === 'namespace') {
      translateNamespace(tool, param, out);
    }
  });
}

/** A `namespace` tool: each of its functions and custom tools under its flattened name. */
function translateNamespace(tool: JsonObject, param: string, out: Translation): void {
  const namespace = tool.name;
  if (typeof namespace !== 'string' || namespace.length === 0) throw wrongType(`${param}.name`, 'a non-empty string', namespace ?? null);
  if (!Array.isArray(tool.tools)) throw wrongType(`${param}.tools`, 'an array of tools', tool.tools ?? null);
  tool.tools.forEach((inner, index) => {
    const innerParam = `${param}.tools[${index}]`;
    if (!isObject(inner)) throw wrongType(innerParam, 'a tool object', inner);
    if (inner.type !== 'function' && inner.type !== 'custom') return;
    if (typeof inner.name !== 'string') throw wrongType(`${innerParam}.name`, 'a string', inner.name ?? null);
    const flat = flattenedName(namespace, inner.name);
    out.namespaced.set(flat, { namespace, name: inner.name });
    addTool(inner, flat, innerParam, out);
  });
}

/** `tool_choice`: modes as they are, a function or custom tool by its (flattened) name, a dropped tool's choice `auto`. */
function translateToolChoice(choice: Json, out: Translation): Json {
  if (!given(choice)) return undefined;
  const hasTools = out.tools.length > 0;
  if (typeof choice === 'string') return choice === 'auto' && !hasTools ? undefined : choice;
  if (!isObject(choice)) return choice;
  if (choice.type === 'function' || choice.type === 'custom') {
    const names = out.tools.map((tool) => (tool.function as JsonObject).name);
    const namespaced = [...out.namespaced].find(([, entry]) => entry.name === choice.name)?.[0];
    return { type: 'function', function: { name: names.includes(choice.name) || namespaced === undefined ? choice.name : namespaced } };
  }
  // `allowed_tools` keeps its mode (the restriction to some tools is not passed on).
  const mode = choice.type === 'allowed_tools' && (choice.mode === 'required' || choice.mode === 'auto') ? choice.mode : 'auto';
  return hasTools ? mode : undefined;
}

/** One content part of an input message, in the chat shape (1:1, so part indexes match). */
function contentPart(part: Json, param: string): Json {
  if (!isObject(part)) return part;
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: part.text };
    case 'refusal':
      return { type: 'refusal', refusal: part.refusal };
    case 'input_image': {
      if (!given(part.image_url)) {
        if (given(part.file_id))
          throw invalid(
            `${param}.file_id`,
            `Unsupported parameter: '${param}.file_id'. Files are not stored by this gateway: send 'image_url'.`,
            'unsupported_parameter',
          );
        throw invalid(`${param}.image_url`, `Missing required parameter: '${param}.image_url'.`, 'missing_required_parameter');
      }
      const detail = part.detail === 'original' ? 'high' : part.detail;
      return { type: 'image_url', image_url: { url: part.image_url, ...(given(detail) ? { detail } : {}) } };
    }
    case 'input_file': {
      if (given(part.file_url) && !given(part.file_data) && !given(part.file_id))
        throw invalid(`${param}.file_url`, `Unsupported parameter: '${param}.file_url'. Send the file's content in 'file_data'.`, 'unsupported_parameter');
      const file: JsonObject = {};
      for (const field of ['file_id', 'file_data', 'filename'] as const) if (given(part[field])) file[field] = part[field];
      return { type: 'file', file };
    }
    default:
      throw invalid(
        `${param}.type`,
        `Invalid value for '${param}.type': ${typeof part.type === 'string' ? `'${part.type.slice(0, 64)}'` : kindOf(part.type ?? null)}. Content parts may be: 'input_text', 'input_image', 'input_file', 'output_text', 'refusal'.`,
      );
  }
}

/** A `message` item: its role, and its content (a string, or parts). */
function translateMessage(item: JsonObject, param: string, out: Translation): void {
  const role = item.role;
  if (!['user', 'assistant', 'system', 'developer'].includes(role as string)) {
    if (!given(role)) throw invalid(`${param}.role`, `Missing required parameter: '${param}.role'.`, 'missing_required_parameter');
    throw invalid(`${param}.role`, `Invalid value for '${param}.role': supported values are 'user', 'assistant', 'system' and 'developer'.`);
  }
  const content = Array.isArray(item.content) ? item.content.map((part, index) => contentPart(part, `${param}.content[${index}]`)) : item.content;
  out.sources.push([`messages[${out.messages.length}]`, param]);
  out.messages.push({ role, content });
}

/**
 * A `function_call` item (or a `custom_tool_call`, its `input` as the arguments `{"input": ...}`):
 * a tool call of the assistant message it follows (or of a new one).
 */
function translateFunctionCall(item: JsonObject, param: string, out: Translation): void {
  let message = out.messages.at(-1);
  if (message?.role !== 'assistant') {
    message = { role: 'assistant', content: null };
    out.sources.push([`messages[${out.messages.length}]`, param]);
    out.messages.push(message);
  }
  const calls = (message.tool_calls ??= []) as JsonObject[];
  const name = typeof item.namespace === 'string' && typeof item.name === 'string' ? flattenedName(item.namespace, item.name) : item.name;
  const prefix = `messages[${out.messages.length - 1}].tool_calls[${calls.length}]`;
  out.sources.push(
    [`${prefix}.function.name`, `${param}.name`],
    [`${prefix}.function.arguments`, `${param}.arguments`],
    [`${prefix}.id`, `${param}.call_id`],
    [prefix, param],
  );
  if (item.type === 'custom_tool_call' && typeof item.input !== 'string') throw wrongType(`${param}.input`, 'a string', item.input ?? null);
  const args = item.type === 'custom_tool_call' ? JSON.stringify({ input: item.input }) : item.arguments;
  calls.push({ id: item.call_id, type: 'function', function: { name, arguments: args } });
}

/** A `function_call_output` item: a tool message with the output's text. */
function translateFunctionCallOutput(item: JsonObject, param: string, out: Translation): void {
  let content = item.output;
  if (Array.isArray(content)) {
    content = content
      .map((part, index) => {
        if (!isObject(part)) throw wrongType(`${param}.output[${index}]`, 'a content part object', part);
        return part.type === 'input_text' && typeof part.text === 'string' ? part.text : `[${String(part.type)} omitted: tool results reach the model as text]`;
      })
      .join('\n');
  }
  const index = out.messages.length;
  out.sources.push([`messages[${index}].tool_call_id`, `${param}.call_id`], [`messages[${index}].content`, `${param}.output`], [`messages[${index}]`, param]);
  out.messages.push({ role: 'tool', tool_call_id: item.call_id, content });
}

/** `instructions` and `input`: the conversation as chat messages. */
function translateInput(body: JsonObject, out: Translation): void {
  if (given(body.instructions)) {
    out.sources.push(['messages[0].content', 'instructions'], ['messages[0]', 'instructions']);
    out.messages.push({ role: 'system', content: body.instructions });
  }
  const input = body.input;
  if (!given(input)) throw invalid('input', "Missing required parameter: 'input'.", 'missing_required_parameter');
  if (typeof input === 'string') {
    out.sources.push([`messages[${out.messages.length}]`, 'input']);
    out.messages.push({ role: 'user', content: input });
    return;
  }
  if (!Array.isArray(input)) throw wrongType('input', 'a string or an array of input items', input);
  if (input.length === 0) throw invalid('input', "Invalid 'input': empty array. Expected at least 1 input item.", 'empty_array');
  for (const [index, item] of input.entries()) translateItem(item, `input[${index}]`, out);
}

/** One input item, by its type; a message may leave its type out. */
function translateItem(item: Json, param: string, out: Translation): void {
  if (!isObject(item)) throw wrongType(param, 'an input item object', item);
  const type = item.type ?? (given(item.role) ? 'message' : undefined);
  if (typeof type !== 'string') throw invalid(`${param}.type`, `Missing required parameter: '${param}.type'.`, 'missing_required_parameter');
  if (type === 'message') translateMessage(item, param, out);
  else if (type === 'function_call' || type === 'custom_tool_call') translateFunctionCall(item, param, out);
  else if (type === 'function_call_output' || type === 'custom_tool_call_output') translateFunctionCallOutput(item, param, out);
  else if (type === 'compaction_trigger') translateCompactionTrigger(param, out);
  else if (type === 'compaction') translateCompaction(item, param, out);
  else if (type === 'item_reference')
    throw invalid(
      `${param}.id`,
      `Item with id '${String(item.id).slice(0, 64)}' not found: this gateway does not store items. Send the item itself.`,
      'item_not_found',
    );
  // Anything else (reasoning, hosted tools' calls and outputs) is dropped.
}

/** A `compaction_trigger` item: the model is asked for the summary that will replace the conversation. */
function translateCompactionTrigger(param: string, out: Translation): void {
  out.compaction = true;
  out.sources.push([`messages[${out.messages.length}]`, param]);
  out.messages.push({ role: 'user', content: COMPACTION_PROMPT });
}

/** A `compaction` item (the answer to an earlier compaction): the user message carrying its summary. */
function translateCompaction(item: JsonObject, param: string, out: Translation): void {
  const summary = compactedSummary(item);
  if (summary === undefined)
    throw invalid(
      `${param}.encrypted_content`,
      `Invalid '${param}.encrypted_content': this compaction item was not made by this gateway, so its content cannot be read. Send the conversation it replaced instead.`,
      'invalid_compaction',
    );
  out.sources.push([`messages[${out.messages.length}]`, param]);
  out.messages.push({ role: 'user', content: COMPACTED_HISTORY_PREFIX + summary });
}

/** `text.format` as a chat `response_format`. */
function responseFormat(text: Json): Json {
  if (!given(text)) return undefined;
  if (!isObject(text)) throw wrongType('text', 'an object', text);
  const format = text.format;
  if (!given(format) || (isObject(format) && format.type === 'text')) return undefined;
  // Anything but a JSON schema is passed on by its type, for the chat parser to accept or refuse.
  if (!isObject(format) || format.type !== 'json_schema') return isObject(format) ? { type: format.type } : format;
  const schema: JsonObject = { name: format.name, schema: format.schema };
  if (given(format.description)) schema.description = format.description;
  if (given(format.strict)) schema.strict = format.strict;
  return { type: 'json_schema', json_schema: schema };
}

/** `reasoning.effort` as chat's `reasoning_effort`; `summary` is not passed on. */
function reasoningEffort(reasoning: Json): Json {
  if (!given(reasoning)) return undefined;
  if (!isObject(reasoning)) throw wrongType('reasoning', 'an object', reasoning);
  const effort = reasoning.effort;
  if (effort === 'none' || !given(effort)) return undefined;
  return effort === 'xhigh' ? 'high' : effort;
}

/** The fields a Response repeats, as the request set them or at OpenAI's defaults. */
function echoFields(body: JsonObject): JsonObject {
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: isObject(body.reasoning) ? { effort: body.reasoning.effort ?? null, summary: body.reasoning.summary ?? null } : { effort: null, summary: null },
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: isObject(body.text) ? body.text : { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: Array.isArray(body.tools) ? body.tools : [],
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
    user: body.user ?? null,
  };
}

/** The fields passed to the chat parser under the same name. */
const SAME_FIELDS = [
  'model',
  'temperature',
  'top_p',
  'parallel_tool_calls',
  'metadata',
  'user',
  'stream',
  'store',
  'service_tier',
  'route_policy',
  'fallbacks',
];

/** The chat body a Responses body means. */
function chatBody(body: JsonObject, out: Translation): JsonObject {
  translateTools(body.tools, out);
  translateInput(body, out);
  const chat: JsonObject = { messages: out.messages };
  for (const field of SAME_FIELDS) if (given(body[field])) chat[field] = body[field];
  const extra: JsonObject = {
    tools: out.tools.length > 0 ? out.tools : undefined,
    // A summary is text: the tools stay declared (earlier calls refer to them) but none is called.
    tool_choice: out.compaction && out.tools.length > 0 ? 'none' : translateToolChoice(body.tool_choice, out),
    max_completion_tokens: body.max_output_tokens,
    response_format: responseFormat(body.text),
    reasoning_effort: reasoningEffort(body.reasoning),
  };
  for (const [field, value] of Object.entries(extra)) if (given(value)) chat[field] = value;
  if (given(body.include) && !Array.isArray(body.include)) throw wrongType('include', 'an array of strings', body.include);
  return chat;
}

/**
 * Validates a Responses body and converts it into the gateway's request. Throws a RequestError
 * (400) naming the offending Responses field.
 */
export function parseResponsesRequest(original: Json): ParsedResponsesRequest {
  if (!isObject(original)) throw invalid(null, `The request body must be a JSON object, but got ${kindOf(original)}.`, 'invalid_body');
  if (!given(original.model)) throw invalid('model', "Missing required parameter: 'model'.", 'missing_required_parameter');
  refuseStateful(original);
  const out: Translation = { messages: [], tools: [], sources: [], namespaced: new Map(), custom: new Set(), compaction: false };
  const chat = chatBody(original, out);
  let parsed: ParsedChatRequest;
  try {
    parsed = parseChatRequest(chat);
  } catch (error) {
    throw error instanceof RequestError ? renamedError(error, out.sources, RENAMED_FIELDS) : error;
  }
  return { ...parsed, responses: { namespaced: out.namespaced, custom: out.custom, echo: echoFields(original), compaction: out.compaction } };
}
