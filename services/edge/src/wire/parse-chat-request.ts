/**
 * Validates an OpenAI chat-completions body and converts it into the protobuf ChatRequest.
 *
 * Every rule of OpenAI's published schema that a caller can break is checked here, and each
 * violation is a 400 whose `param` names the field (`messages[2].content[0].image_url.url`) and
 * whose message says what is wrong and what is allowed. Fields the gateway does not use but
 * clients send routinely (`store`, `metadata`, `user`, `service_tier`, ...) are accepted.
 * Anthropic's prompt-cache breakpoint `cache_control` (`{"type":"ephemeral","ttl"?:"5m"|"1h"}`) is
 * accepted on content parts, messages and tools, as LiteLLM and OpenRouter accept it, and kept as
 * the request's CacheControl for the providers that take breakpoints.
 * Hand-written rather than schema-compiled: the messages name the exact path and the allowed
 * values, and one pass both checks and converts, so the body is walked once.
 *
 * One piece: one schema's validator, a function per object of the body in the order the schema
 * gives them; split, the rules of one body and the paths its errors name would be read across
 * files.
 */
import type { CacheControl, ChatRequest, ContentPart, Message, Tool, ToolCall } from '@gateway/proto';
import type { ParsedChatRequest } from '../completions/parsed-request.js';
import { invalid } from '../request-error.js';
import { isObject, type Json, type JsonObject } from './translated-request.js';

export type { EmbeddingInputs, ParsedChatRequest } from '../completions/parsed-request.js';

const ROLES = {
  system: 'ROLE_SYSTEM',
  developer: 'ROLE_DEVELOPER',
  user: 'ROLE_USER',
  assistant: 'ROLE_ASSISTANT',
  tool: 'ROLE_TOOL',
} as const;
type RoleName = keyof typeof ROLES;

const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_TOOLS = 128;
const MAX_STOP = 4;
const MAX_N = 128;
const MAX_INT32 = 2_147_483_647;
const MAX_FALLBACKS = 8;
/** OpenAI's limit on logit_bias entries. */
const MAX_LOGIT_BIAS = 300;
const MAX_METADATA_KEYS = 16;
/**
 * How many levels of objects and arrays a JSON Schema (tool parameters, a response format) may
 * nest (64 levels of `properties` take 128). Far beyond any real
 * schema; a deeper one would cost every service that walks it (and overflow the stack of those
 * that recurse) for nothing.
 */
const MAX_SCHEMA_DEPTH = 128;

/** How a value reads in an error message (`an array`, `a string`). */
export function describe(value: Json): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a number';
  return `a ${typeof value}`;
}

function typeError(param: string, expected: string, value: Json) {
  return invalid(param, `Invalid type for '${param}': expected ${expected}, but got ${describe(value)}.`, 'invalid_type');
}

function missing(param: string) {
  return invalid(param, `Missing required parameter: '${param}'.`, 'missing_required_parameter');
}

/** A nested object a field needs: absent is a missing parameter, anything else but an object a type error. */
function requiredObject(value: Json, param: string): JsonObject {
  if (isObject(value)) return value;
  throw value === undefined ? missing(param) : typeError(param, 'an object', value);
}

/** The values a numeric field allows. */
interface NumberRange {
  min: number;
  max: number;
  integer?: boolean;
}

function optionalNumber(body: JsonObject, name: string, range: NumberRange): number | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  const { min, max, integer } = range;
  if (typeof value !== 'number' || !(integer ? Number.isInteger(value) : Number.isFinite(value)))
    throw typeError(name, `${integer ? 'an integer' : 'a number'} between ${min} and ${max}`, value);
  if (value < min || value > max) {
    throw invalid(
      name,
      `Invalid value for '${name}': ${value} is ${value < min ? 'below the minimum' : 'above the maximum'}; it must be ${integer ? 'an integer ' : ''}between ${min} and ${max}.`,
    );
  }
  return value;
}

function optionalBoolean(body: JsonObject, name: string, param = name): boolean | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw typeError(param, 'a boolean', value);
  return value;
}

function optionalString(body: JsonObject, name: string, param = name): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw typeError(param, 'a string', value);
  return value;
}

function requiredString(body: JsonObject, name: string, param: string): string {
  const value = body[name];
  if (value === undefined || value === null) throw missing(param);
  if (typeof value !== 'string') throw typeError(param, 'a string', value);
  return value;
}

function oneOf<T extends string>(value: Json, allowed: readonly T[], param: string): T {
  if (typeof value !== 'string') throw typeError(param, `one of ${allowed.map((v) => `'${v}'`).join(', ')}`, value);
  if (!allowed.includes(value as T)) {
    throw invalid(param, `Invalid value for '${param}': '${truncate(value)}'. Supported values are: ${allowed.map((v) => `'${v}'`).join(', ')}.`);
  }
  return value as T;
}

function truncate(text: string, length = 64): string {
  return text.length > length ? `${text.slice(0, length)}...` : text;
}

/** Whether a value nests objects and arrays deeper than `limit` levels; iterative, so any depth is safe. */
function nestsDeeperThan(value: Json, limit: number): boolean {
  const stack: Array<{ node: Json; depth: number }> = [{ node: value, depth: 1 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (depth > limit) return true;
    if (node === null || typeof node !== 'object') continue;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push({ node: child, depth: depth + 1 });
    }
  }
  return false;
}

/** How many own keys an object has, counting no further than `limit` + 1. */
function keyCountUpTo(value: { [key: string]: Json }, limit: number): number {
  let count = 0;
  for (const key in value) {
    if (Object.hasOwn(value, key) && ++count > limit) break;
  }
  return count;
}

/** Parses a JSON Schema given as an object into the JSON string the contracts carry. */
function schemaJson(value: Json, param: string): string {
  if (!isObject(value)) throw typeError(param, 'a JSON Schema object', value);
  if (nestsDeeperThan(value, MAX_SCHEMA_DEPTH)) {
    throw invalid(param, `Invalid schema for '${param}': it nests deeper than ${MAX_SCHEMA_DEPTH} levels.`, 'invalid_function_parameters');
  }
  if (value.type !== undefined && value.type !== 'object') {
    throw invalid(
      param,
      `Invalid schema for '${param}': the top-level schema must be of type 'object', got ${JSON.stringify(value.type)}.`,
      'invalid_function_parameters',
    );
  }
  return JSON.stringify(value);
}

/** A `cache_control` breakpoint on a part, message or tool; undefined when absent or null. */
function parseCacheControl(holder: JsonObject, param: string): CacheControl | undefined {
  const value = holder.cache_control;
  if (value === undefined || value === null) return undefined;
  const controlParam = `${param}.cache_control`;
  if (!isObject(value)) throw typeError(controlParam, 'an object', value);
  const type = oneOf(value.type, ['ephemeral'] as const, `${controlParam}.type`);
  if (value.ttl === undefined || value.ttl === null) return { type };
  return { type, ttl: oneOf(value.ttl, ['5m', '1h'] as const, `${controlParam}.ttl`) };
}

/** The holder with its `cache_control` set, when the body gave one. */
function withCacheControl<Holder extends { cache_control?: CacheControl | null }>(target: Holder, raw: JsonObject, param: string): Holder {
  const control = parseCacheControl(raw, param);
  if (control) target.cache_control = control;
  return target;
}

function parseContentPart(part: Json, role: RoleName, param: string, traits: { vision: boolean }): ContentPart {
  if (!isObject(part)) throw typeError(param, 'a content part object', part);
  return withCacheControl(contentOfPart(part, role, param, traits), part, param);
}

function contentOfPart(part: JsonObject, role: RoleName, param: string, traits: { vision: boolean }): ContentPart {
  const allowed: readonly string[] = role === 'user' ? ['text', 'image_url', 'input_audio', 'file'] : role === 'assistant' ? ['text', 'refusal'] : ['text'];
  const type = part.type;
  if (type === undefined) throw missing(`${param}.type`);
  if (typeof type !== 'string' || !allowed.includes(type)) {
    throw invalid(
      `${param}.type`,
      `Invalid value for '${param}.type': ${typeof type === 'string' ? `'${truncate(type)}'` : describe(type)}. Content parts of ${role} messages may be: ${allowed.map((v) => `'${v}'`).join(', ')}.`,
    );
  }
  switch (type) {
    case 'text':
      return { text: requiredString(part, 'text', `${param}.text`) };
    case 'refusal':
      return { refusal: requiredString(part, 'refusal', `${param}.refusal`) };
    case 'image_url': {
      const image = requiredObject(part.image_url, `${param}.image_url`);
      const url = requiredString(image, 'url', `${param}.image_url.url`);
      if (!/^(https?:\/\/|data:image\/[a-zA-Z0-9.+-]+;base64,)/.test(url)) {
        throw invalid(
          `${param}.image_url.url`,
          `Invalid value for '${param}.image_url.url': expected an http(s) URL or a base64 data URL of an image.`,
          'invalid_image_url',
        );
      }
      const detail =
        image.detail === undefined || image.detail === null ? '' : oneOf(image.detail, ['auto', 'low', 'high'] as const, `${param}.image_url.detail`);
      traits.vision = true;
      return { image_url: { url, detail } };
    }
    case 'input_audio': {
      const audio = part.input_audio;
      if (!isObject(audio)) throw typeError(`${param}.input_audio`, 'an object', audio);
      return {
        input_audio: {
          data: requiredString(audio, 'data', `${param}.input_audio.data`),
          format: oneOf(audio.format, ['wav', 'mp3'] as const, `${param}.input_audio.format`),
        },
      };
    }
    default: {
      const file = part.file;
      if (!isObject(file)) throw typeError(`${param}.file`, 'an object', file);
      const fileId = optionalString(file, 'file_id', `${param}.file.file_id`);
      const fileData = optionalString(file, 'file_data', `${param}.file.file_data`);
      if (!fileId && !fileData)
        throw invalid(`${param}.file`, `Invalid value for '${param}.file': one of 'file_id' or 'file_data' is required.`, 'missing_required_parameter');
      return { file: { file_id: fileId ?? '', file_data: fileData ?? '', filename: optionalString(file, 'filename', `${param}.file.filename`) ?? '' } };
    }
  }
}

function parseToolCall(call: Json, param: string): ToolCall {
  if (!isObject(call)) throw typeError(param, 'a tool call object', call);
  const id = requiredString(call, 'id', `${param}.id`);
  if (call.type !== undefined && call.type !== 'function') oneOf(call.type, ['function'] as const, `${param}.type`);
  const fn = requiredObject(call.function, `${param}.function`);
  const name = requiredString(fn, 'name', `${param}.function.name`);
  const args = fn.arguments;
  if (args === undefined || args === null) throw missing(`${param}.function.arguments`);
  if (typeof args !== 'string') throw typeError(`${param}.function.arguments`, 'a string holding JSON', args);
  return { id, type: 'function', function: { name, arguments: args } };
}

function parseMessage(raw: Json, index: number, traits: { vision: boolean }): Message {
  const param = `messages[${index}]`;
  if (!isObject(raw)) throw typeError(param, 'a message object', raw);
  const roleValue = raw.role;
  if (roleValue === undefined || roleValue === null) throw missing(`${param}.role`);
  const role = oneOf(roleValue, Object.keys(ROLES) as RoleName[], `${param}.role`);
  const message: Message = { role: ROLES[role] };

  const content = raw.content;
  const contentParam = `${param}.content`;
  if (content === undefined || content === null) {
    const hasToolCalls = Array.isArray(raw.tool_calls) && raw.tool_calls.length > 0;
    if (role !== 'assistant' || (!hasToolCalls && raw.function_call == null && raw.refusal == null)) {
      throw invalid(
        contentParam,
        `Missing required parameter: '${contentParam}'. ${role === 'assistant' ? "An assistant message needs 'content', 'tool_calls' or 'refusal'." : `A ${role} message needs 'content'.`}`,
        'missing_required_parameter',
      );
    }
  } else if (typeof content === 'string') {
    message.text = content;
  } else if (Array.isArray(content)) {
    if (content.length === 0 && role !== 'assistant')
      throw invalid(contentParam, `Invalid '${contentParam}': an array of content parts must not be empty.`, 'empty_array');
    message.parts = { parts: content.map((part, partIndex) => parseContentPart(part, role, `${contentParam}[${partIndex}]`, traits)) };
  } else {
    throw typeError(contentParam, 'a string or an array of content parts', content);
  }

  const name = optionalString(raw, 'name', `${param}.name`);
  if (name !== undefined) message.name = name;

  if (raw.tool_calls !== undefined && raw.tool_calls !== null) {
    if (role !== 'assistant')
      throw invalid(`${param}.tool_calls`, `Invalid parameter: '${param}.tool_calls' is only allowed on messages with role 'assistant'.`, 'invalid_parameter');
    if (!Array.isArray(raw.tool_calls)) throw typeError(`${param}.tool_calls`, 'an array', raw.tool_calls);
    message.tool_calls = raw.tool_calls.map((call, callIndex) => parseToolCall(call, `${param}.tool_calls[${callIndex}]`));
  }
  if (role === 'tool') {
    message.tool_call_id = requiredString(raw, 'tool_call_id', `${param}.tool_call_id`);
  }
  const refusal = role === 'assistant' ? optionalString(raw, 'refusal', `${param}.refusal`) : undefined;
  if (refusal !== undefined) message.refusal = refusal;
  return withCacheControl(message, raw, param);
}

/** Refuses an array longer than `max` (`things`: what its elements are called in the message). */
function checkLength(value: Json[], param: string, max: number, things: string): void {
  if (value.length > max)
    throw invalid(
      param,
      `Invalid '${param}': array too long. Expected an array with at most ${max} ${things}, but got ${value.length}.`,
      'array_above_max_length',
    );
}

function parseTools(value: Json): Tool[] {
  if (!Array.isArray(value)) throw typeError('tools', 'an array of tools', value);
  checkLength(value, 'tools', MAX_TOOLS, 'elements');
  const names = new Set<string>();
  return value.map((tool, index) => {
    const param = `tools[${index}]`;
    if (!isObject(tool)) throw typeError(param, 'a tool object', tool);
    const type = tool.type;
    if (type === undefined) throw missing(`${param}.type`);
    oneOf(type, ['function'] as const, `${param}.type`);
    const fn = requiredObject(tool.function, `${param}.function`);
    const name = requiredString(fn, 'name', `${param}.function.name`);
    if (!FUNCTION_NAME.test(name)) {
      throw invalid(
        `${param}.function.name`,
        `Invalid '${param}.function.name': string does not match pattern. Expected a string of 1 to 64 characters from a-z, A-Z, 0-9, underscores and dashes, but got '${truncate(name)}'.`,
        'invalid_function_name',
      );
    }
    if (names.has(name))
      throw invalid(
        `${param}.function.name`,
        `Invalid '${param}.function.name': the function name '${name}' is used by more than one tool.`,
        'duplicate_function_name',
      );
    names.add(name);
    const definition: Tool = { type: 'function', function: { name } };
    const description = optionalString(fn, 'description', `${param}.function.description`);
    if (description !== undefined) definition.function!.description = description;
    if (fn.parameters !== undefined && fn.parameters !== null) definition.function!.parameters_json = schemaJson(fn.parameters, `${param}.function.parameters`);
    const strict = optionalBoolean(fn, 'strict', `${param}.function.strict`);
    if (strict !== undefined) definition.function!.strict = strict;
    return withCacheControl(definition, tool, param);
  });
}

function parseStop(value: Json): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [value];
  if (!Array.isArray(value)) throw typeError('stop', 'a string or an array of 1 to 4 strings', value);
  checkLength(value, 'stop', MAX_STOP, 'strings');
  return value.map((item, index) => {
    if (typeof item !== 'string') throw typeError(`stop[${index}]`, 'a string', item);
    return item;
  });
}

/** The tool call id given to a legacy `function_call` of the assistant message at `index`. */
export function legacyCallId(index: number): string {
  return `call_function_${index}`;
}

/**
 * Rewrites OpenAI's deprecated function calling into tools, on a copy of the body: `functions`
 * become `tools`, `function_call` becomes `tool_choice` (and one call at a time, as it was), an
 * assistant message's `function_call` becomes a tool call with a made-up id, and a `function`
 * message becomes a `tool` message answering the latest call of that name. Returns the body
 * unchanged and false when nothing legacy is in it.
 */
function translateLegacyFunctions(body: JsonObject, messages: Json[]): { body: JsonObject; legacy: boolean } {
  const legacyMessages = messages.some(
    (message) => isObject(message) && (message.role === 'function' || (message.role === 'assistant' && message.function_call != null)),
  );
  const legacy = body.functions != null || body.function_call != null;
  if (!legacy && !legacyMessages) return { body, legacy: false };
  const translated: JsonObject = { ...body };
  if (body.functions != null) {
    if (body.tools != null)
      throw invalid('functions', "Invalid parameter: 'functions' and 'tools' cannot both be set; send the functions as 'tools'.", 'invalid_parameter');
    if (!Array.isArray(body.functions)) throw typeError('functions', 'an array of functions', body.functions);
    translated.tools = body.functions.map((fn, index) => {
      if (!isObject(fn)) throw typeError(`functions[${index}]`, 'a function object', fn);
      return { type: 'function', function: fn };
    });
    delete translated.functions;
  }
  if (body.function_call != null) {
    if (body.tool_choice != null)
      throw invalid('function_call', "Invalid parameter: 'function_call' and 'tool_choice' cannot both be set; use 'tool_choice'.", 'invalid_parameter');
    const choice = body.function_call;
    if (choice === 'none' || choice === 'auto') translated.tool_choice = choice;
    else if (isObject(choice) && typeof choice.name === 'string') translated.tool_choice = { type: 'function', function: { name: choice.name } };
    else throw typeError('function_call', "'none', 'auto' or {\"name\": ...}", choice);
    delete translated.function_call;
  }
  if (legacy && body.parallel_tool_calls == null) translated.parallel_tool_calls = false;
  const callIds = new Map<string, string>();
  let lastCallId: string | undefined;
  translated.messages = messages.map((message, index) => {
    if (!isObject(message)) return message;
    if (message.role === 'assistant' && message.function_call != null && message.tool_calls == null) {
      const call = message.function_call;
      if (!isObject(call)) throw typeError(`messages[${index}].function_call`, 'an object with name and arguments', call);
      const name = requiredString(call, 'name', `messages[${index}].function_call.name`);
      const id = legacyCallId(index);
      callIds.set(name, id);
      lastCallId = id;
      const { function_call: _ignored, ...rest } = message;
      return { ...rest, tool_calls: [{ id, type: 'function', function: { name, arguments: call.arguments ?? '' } }] };
    }
    if (message.role === 'function') {
      const name = requiredString(message, 'name', `messages[${index}].name`);
      const id = callIds.get(name) ?? lastCallId;
      if (id === undefined)
        throw invalid(
          `messages[${index}]`,
          `Invalid 'messages[${index}]': a 'function' message must follow an assistant message with a 'function_call'.`,
          'invalid_value',
        );
      return { role: 'tool', tool_call_id: id, content: message.content ?? '' };
    }
    return message;
  });
  return { body: translated, legacy };
}

type NumberField = 'temperature' | 'top_p' | 'n' | 'presence_penalty' | 'frequency_penalty' | 'seed' | 'top_logprobs';

/** The numeric fields before `stop`, in the order they are checked, with what each allows. */
const SAMPLING_FIELDS: ReadonlyArray<readonly [NumberField, NumberRange]> = [
  ['temperature', { min: 0, max: 2 }],
  ['top_p', { min: 0, max: 1 }],
  ['n', { min: 1, max: MAX_N, integer: true }],
];
/** The numeric fields after the token limits. */
const PENALTY_FIELDS: ReadonlyArray<readonly [NumberField, NumberRange]> = [
  ['presence_penalty', { min: -2, max: 2 }],
  ['frequency_penalty', { min: -2, max: 2 }],
  ['seed', { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER, integer: true }],
];
const TOKEN_LIMIT: NumberRange = { min: 1, max: MAX_INT32, integer: true };
const TOP_LOGPROBS: NumberRange = { min: 0, max: 20, integer: true };

/** Copies each numeric field of a table onto the request, checked. */
function copyNumbers(body: JsonObject, request: ChatRequest, fields: ReadonlyArray<readonly [NumberField, NumberRange]>): void {
  for (const [name, range] of fields) {
    const value = optionalNumber(body, name, range);
    if (value !== undefined) request[name] = value;
  }
}

/** The body, which must be an object. */
/** The body: a JSON object. */
export function requiredBody(original: Json): JsonObject {
  if (isObject(original)) return original;
  throw invalid(null, `The request body must be a JSON object, but got ${describe(original)}.`, 'invalid_body');
}

/** `model`: a non-empty id. */
export function requiredModel(body: JsonObject): string {
  const model = body.model;
  if (model === undefined || model === null) throw missing('model');
  if (typeof model !== 'string') throw typeError('model', 'a string', model);
  if (model.length === 0) throw invalid('model', "Invalid value for 'model': the model id must not be empty.", 'invalid_value');
  return model;
}

/** `messages`: a non-empty array (each message is checked by parseMessage). */
function requiredMessages(body: JsonObject): Json[] {
  const messages = body.messages;
  if (messages === undefined || messages === null) throw missing('messages');
  if (!Array.isArray(messages)) throw typeError('messages', 'an array of messages', messages);
  if (messages.length === 0) throw invalid('messages', "Invalid 'messages': empty array. Expected an array with at least 1 message.", 'empty_array');
  return messages;
}

/** Sampling and length: temperature, top_p, n, stop, max_tokens / max_completion_tokens, penalties, seed. */
function parseSampling(body: JsonObject, request: ChatRequest): void {
  copyNumbers(body, request, SAMPLING_FIELDS);
  request.stop = parseStop(body.stop);
  const maxTokens = optionalNumber(body, 'max_tokens', TOKEN_LIMIT);
  const maxCompletionTokens = optionalNumber(body, 'max_completion_tokens', TOKEN_LIMIT);
  if (maxCompletionTokens !== undefined) {
    request.max_tokens = maxCompletionTokens;
    request.max_tokens_is_completion_tokens = true;
  } else if (maxTokens !== undefined) {
    request.max_tokens = maxTokens;
  }
  copyNumbers(body, request, PENALTY_FIELDS);
}

/** `tools`, `tool_choice` and `parallel_tool_calls`; returns whether the request needs tool support. */
function parseToolFields(body: JsonObject, request: ChatRequest): boolean {
  let needsTools = false;
  if (body.tools !== undefined && body.tools !== null) {
    request.tools = parseTools(body.tools);
    needsTools = request.tools.length > 0;
  }
  const toolChoice = body.tool_choice;
  if (toolChoice !== undefined && toolChoice !== null) request.tool_choice = parseToolChoice(toolChoice, request.tools ?? []);
  const parallel = optionalBoolean(body, 'parallel_tool_calls');
  // Accepted without tools too, as OpenAI does; it then has no effect.
  if (parallel !== undefined) request.parallel_tool_calls = parallel;
  return needsTools;
}

function parseToolChoice(toolChoice: Json, tools: Tool[]): NonNullable<ChatRequest['tool_choice']> {
  const toolNames = new Set(tools.map((tool) => tool.function?.name));
  if (typeof toolChoice === 'string') {
    const mode = oneOf(toolChoice, ['none', 'auto', 'required'] as const, 'tool_choice');
    if (mode !== 'none' && toolNames.size === 0)
      throw invalid('tool_choice', `Invalid value for 'tool_choice': '${mode}' is only allowed when 'tools' are specified.`, 'invalid_value');
    return { mode };
  }
  if (!isObject(toolChoice)) {
    throw typeError('tool_choice', '\'none\', \'auto\', \'required\' or {"type": "function", "function": {"name": ...}}', toolChoice);
  }
  if (toolChoice.type !== 'function') oneOf(toolChoice.type ?? null, ['function'] as const, 'tool_choice.type');
  const fn = toolChoice.function;
  if (!isObject(fn)) throw typeError('tool_choice.function', 'an object with a name', fn ?? null);
  const name = requiredString(fn, 'name', 'tool_choice.function.name');
  if (!toolNames.has(name)) {
    throw invalid(
      'tool_choice.function.name',
      `Invalid value for 'tool_choice': the function '${truncate(name)}' is not among the functions in 'tools'.`,
      'invalid_value',
    );
  }
  return { function_name: name };
}

/** `response_format`; returns whether the request needs JSON mode. */
function parseResponseFormat(format: Json, request: ChatRequest): boolean {
  if (format === undefined || format === null) return false;
  if (!isObject(format)) throw typeError('response_format', 'an object', format);
  const type = oneOf(format.type ?? null, ['text', 'json_object', 'json_schema'] as const, 'response_format.type');
  request.response_format = { type };
  if (type === 'json_schema') request.response_format.json_schema = parseJsonSchemaFormat(requiredObject(format.json_schema, 'response_format.json_schema'));
  return type !== 'text';
}

function parseJsonSchemaFormat(schema: JsonObject): NonNullable<NonNullable<ChatRequest['response_format']>['json_schema']> {
  const name = requiredString(schema, 'name', 'response_format.json_schema.name');
  if (!FUNCTION_NAME.test(name))
    throw invalid(
      'response_format.json_schema.name',
      "Invalid 'response_format.json_schema.name': expected 1 to 64 characters from a-z, A-Z, 0-9, underscores and dashes.",
      'invalid_value',
    );
  const jsonSchema: NonNullable<NonNullable<ChatRequest['response_format']>['json_schema']> = { name };
  const description = optionalString(schema, 'description', 'response_format.json_schema.description');
  if (description !== undefined) jsonSchema.description = description;
  if (schema.schema !== undefined && schema.schema !== null) jsonSchema.schema_json = schemaJson(schema.schema, 'response_format.json_schema.schema');
  const strict = optionalBoolean(schema, 'strict', 'response_format.json_schema.strict');
  if (strict !== undefined) jsonSchema.strict = strict;
  return jsonSchema;
}

/** `stream` and `stream_options`; returns whether the stream ends with a usage chunk. */
function parseStreaming(body: JsonObject, request: ChatRequest): boolean {
  const stream = optionalBoolean(body, 'stream') ?? false;
  request.stream = stream;
  const streamOptions = body.stream_options;
  if (streamOptions === undefined || streamOptions === null) return false;
  if (!stream) throw invalid('stream_options', "Invalid value for 'stream_options': 'stream_options' is only allowed when 'stream' is true.", 'invalid_value');
  if (!isObject(streamOptions)) throw typeError('stream_options', 'an object', streamOptions);
  const includeUsage = optionalBoolean(streamOptions, 'include_usage', 'stream_options.include_usage') ?? false;
  request.stream_options = { include_usage: includeUsage };
  return includeUsage;
}

/** `logprobs`, `top_logprobs` and `logit_bias`. */
function parseLogprobs(body: JsonObject, request: ChatRequest): void {
  const logprobs = optionalBoolean(body, 'logprobs');
  if (logprobs !== undefined) request.logprobs = logprobs;
  const topLogprobs = optionalNumber(body, 'top_logprobs', TOP_LOGPROBS);
  if (topLogprobs !== undefined) {
    if (!logprobs) throw invalid('top_logprobs', "Invalid value for 'top_logprobs': 'logprobs' must be true when 'top_logprobs' is set.", 'invalid_value');
    request.top_logprobs = topLogprobs;
  }
  const logitBias = body.logit_bias;
  if (logitBias !== undefined && logitBias !== null) request.logit_bias = parseLogitBias(logitBias);
}

function parseLogitBias(logitBias: Json): Record<string, number> {
  if (!isObject(logitBias)) throw typeError('logit_bias', 'an object mapping token ids to numbers from -100 to 100', logitBias);
  if (keyCountUpTo(logitBias, MAX_LOGIT_BIAS) > MAX_LOGIT_BIAS)
    throw invalid('logit_bias', `Invalid 'logit_bias': at most ${MAX_LOGIT_BIAS} tokens may be biased.`, 'invalid_value');
  const biases: Record<string, number> = {};
  for (const [token, bias] of Object.entries(logitBias)) {
    if (!/^\d+$/.test(token))
      throw invalid(`logit_bias.${truncate(token, 20)}`, `Invalid key in 'logit_bias': '${truncate(token, 20)}' is not a token id.`, 'invalid_value');
    if (typeof bias !== 'number' || bias < -100 || bias > 100)
      throw invalid(`logit_bias.${token}`, `Invalid value for 'logit_bias.${token}': expected a number from -100 to 100.`, 'invalid_value');
    biases[token] = Math.round(bias);
  }
  return biases;
}

function parseMetadata(metadata: Json): Record<string, string> {
  if (!isObject(metadata)) throw typeError('metadata', 'an object of string values', metadata);
  if (keyCountUpTo(metadata, MAX_METADATA_KEYS) > MAX_METADATA_KEYS)
    throw invalid('metadata', `Invalid 'metadata': at most ${MAX_METADATA_KEYS} keys are allowed.`, 'invalid_value');
  const entries: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata)) {
    if (key.length > 64) throw invalid('metadata', "Invalid 'metadata': keys must be at most 64 characters.", 'invalid_value');
    if (typeof value !== 'string') throw typeError(`metadata.${truncate(key, 64)}`, 'a string', value);
    if (value.length > 512) throw invalid(`metadata.${key}`, `Invalid 'metadata.${key}': values must be at most 512 characters.`, 'invalid_value');
    entries[key] = value;
  }
  return entries;
}

/** The fields the gateway passes on or accepts without using: user, metadata, store, reasoning_effort, service_tier. */
function parsePassThrough(body: JsonObject, request: ChatRequest): void {
  const user = optionalString(body, 'user');
  if (user !== undefined) request.user = user;
  const metadata = body.metadata;
  if (metadata !== undefined && metadata !== null) request.metadata = parseMetadata(metadata);
  optionalBoolean(body, 'store');
  const effort = body.reasoning_effort;
  if (effort !== undefined && effort !== null) request.reasoning_effort = oneOf(effort, ['minimal', 'low', 'medium', 'high'] as const, 'reasoning_effort');
  const tier = optionalString(body, 'service_tier');
  if (tier !== undefined) request.service_tier = tier;
}

function parseRoutePolicy(body: JsonObject): string | undefined {
  const routePolicy = optionalString(body, 'route_policy');
  if (routePolicy !== undefined && (routePolicy.length === 0 || routePolicy.length > 64)) {
    throw invalid(
      'route_policy',
      "Invalid value for 'route_policy': expected 'balanced', 'cheapest', 'fastest', 'best', 'score>=X' or 'tier>=T'.",
      'invalid_value',
    );
  }
  return routePolicy;
}

function parseFallbacks(fallbackValue: Json): string[] | boolean | undefined {
  if (typeof fallbackValue === 'boolean') return fallbackValue;
  if (fallbackValue === undefined || fallbackValue === null) return undefined;
  if (!Array.isArray(fallbackValue)) throw typeError('fallbacks', 'true, false or an array of model ids', fallbackValue);
  if (fallbackValue.length > MAX_FALLBACKS)
    throw invalid(
      'fallbacks',
      `Invalid 'fallbacks': array too long. Expected at most ${MAX_FALLBACKS} model ids, but got ${fallbackValue.length}.`,
      'array_above_max_length',
    );
  return fallbackValue.map((id, index) => {
    if (typeof id !== 'string' || id.length === 0) throw typeError(`fallbacks[${index}]`, 'a model id', id);
    if (id === 'auto') throw invalid(`fallbacks[${index}]`, "Invalid value for 'fallbacks': 'auto' cannot be a fallback; name a model.", 'invalid_value');
    return id;
  });
}

/**
 * Validates a parsed JSON body and converts it. Throws a RequestError (400) naming the first
 * offending field; the fields are checked in a fixed order, so that error is always the same.
 */
export function parseChatRequest(original: Json): ParsedChatRequest {
  const given = requiredBody(original);
  const model = requiredModel(given);
  const { body, legacy: legacyFunctions } = translateLegacyFunctions(given, requiredMessages(given));
  const traits = { vision: false };
  const request: ChatRequest = { model, messages: (body.messages as Json[]).map((message, index) => parseMessage(message, index, traits)) };
  parseSampling(body, request);
  const needsTools = parseToolFields(body, request);
  const needsJsonMode = parseResponseFormat(body.response_format, request);
  const includeUsage = parseStreaming(body, request);
  parseLogprobs(body, request);
  parsePassThrough(body, request);
  const routePolicy = parseRoutePolicy(body);
  const fallbacks = parseFallbacks(body.fallbacks);
  return {
    request,
    stream: request.stream === true,
    includeUsage,
    needsTools,
    needsVision: traits.vision,
    needsJsonMode,
    routePolicy,
    fallbacks,
    ...(legacyFunctions ? { legacyFunctions } : {}),
  };
}
