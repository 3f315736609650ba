/**
 * Validates an OpenAI chat-completions body and converts it into the protobuf ChatRequest.
 *
 * Every rule of OpenAI's published schema that a caller can break is checked here, and each
 * violation is a 400 whose `param` names the field (`messages[2].content[0].image_url.url`) and
 * whose message says what is wrong and what is allowed. Fields the gateway does not use but
 * clients send routinely (`store`, `metadata`, `user`, `service_tier`, ...) are accepted.
 * Hand-written rather than schema-compiled: the messages name the exact path and the allowed
 * values, and one pass both checks and converts, so the body is walked once.
 */
import type { ChatRequest, ContentPart, Message, Tool, ToolCall } from '@gateway/proto';
import { invalid } from './request-error.js';

/** A validated request and the traits the router and the limiter need. */
export interface ParsedChatRequest {
  request: ChatRequest;
  stream: boolean;
  includeUsage: boolean;
  needsTools: boolean;
  needsVision: boolean;
  needsJsonMode: boolean;
  /** The caller's routing policy for `auto` (`route_policy` field), when set. */
  routePolicy?: string;
  /**
   * `fallbacks`: the model ids to try in order when the chosen one fails before its first byte,
   * `true` for the catalog's chain of the chosen model, `false` for none; absent: the key's default.
   */
  fallbacks?: string[] | boolean;
  /**
   * The caller used the deprecated `functions` / `function_call`: the request was translated to
   * tools, and the answer must come back as `message.function_call` and finish_reason
   * `function_call`, as such callers read it.
   */
  legacyFunctions?: boolean;
}

type Json = unknown;
type JsonObject = Record<string, Json>;

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

function isObject(value: Json): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: Json): string {
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

function optionalNumber(body: JsonObject, name: string, min: number, max: number): number | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw typeError(name, `a number between ${min} and ${max}`, value);
  if (value < min || value > max) {
    throw invalid(
      name,
      `Invalid value for '${name}': ${value} is ${value < min ? 'below the minimum' : 'above the maximum'}; it must be between ${min} and ${max}.`,
    );
  }
  return value;
}

function optionalInteger(body: JsonObject, name: string, min: number, max: number, param = name): number | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw typeError(param, `an integer between ${min} and ${max}`, value);
  if (value < min || value > max) {
    throw invalid(
      param,
      `Invalid value for '${param}': ${value} is ${value < min ? 'below the minimum' : 'above the maximum'}; it must be an integer between ${min} and ${max}.`,
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
  if (value === undefined || value === null) throw invalid(param, `Missing required parameter: '${param}'.`, 'missing_required_parameter');
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

function parseContentPart(part: Json, role: RoleName, param: string, traits: { vision: boolean }): ContentPart {
  if (!isObject(part)) throw typeError(param, 'a content part object', part);
  const allowed: readonly string[] = role === 'user' ? ['text', 'image_url', 'input_audio', 'file'] : role === 'assistant' ? ['text', 'refusal'] : ['text'];
  const type = part.type;
  if (type === undefined) throw invalid(`${param}.type`, `Missing required parameter: '${param}.type'.`, 'missing_required_parameter');
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
      const image = part.image_url;
      if (!isObject(image))
        throw image === undefined
          ? invalid(`${param}.image_url`, `Missing required parameter: '${param}.image_url'.`, 'missing_required_parameter')
          : typeError(`${param}.image_url`, 'an object', image);
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
  const fn = call.function;
  if (!isObject(fn))
    throw fn === undefined
      ? invalid(`${param}.function`, `Missing required parameter: '${param}.function'.`, 'missing_required_parameter')
      : typeError(`${param}.function`, 'an object', fn);
  const name = requiredString(fn, 'name', `${param}.function.name`);
  const args = fn.arguments;
  if (args === undefined || args === null)
    throw invalid(`${param}.function.arguments`, `Missing required parameter: '${param}.function.arguments'.`, 'missing_required_parameter');
  if (typeof args !== 'string') throw typeError(`${param}.function.arguments`, 'a string holding JSON', args);
  return { id, type: 'function', function: { name, arguments: args } };
}

function parseMessage(raw: Json, index: number, traits: { vision: boolean }): Message {
  const param = `messages[${index}]`;
  if (!isObject(raw)) throw typeError(param, 'a message object', raw);
  const roleValue = raw.role;
  if (roleValue === undefined || roleValue === null)
    throw invalid(`${param}.role`, `Missing required parameter: '${param}.role'.`, 'missing_required_parameter');
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
  return message;
}

function parseTools(value: Json): Tool[] {
  if (!Array.isArray(value)) throw typeError('tools', 'an array of tools', value);
  if (value.length > MAX_TOOLS)
    throw invalid(
      'tools',
      `Invalid 'tools': array too long. Expected an array with at most ${MAX_TOOLS} elements, but got ${value.length}.`,
      'array_above_max_length',
    );
  const names = new Set<string>();
  return value.map((tool, index) => {
    const param = `tools[${index}]`;
    if (!isObject(tool)) throw typeError(param, 'a tool object', tool);
    const type = tool.type;
    if (type === undefined) throw invalid(`${param}.type`, `Missing required parameter: '${param}.type'.`, 'missing_required_parameter');
    oneOf(type, ['function'] as const, `${param}.type`);
    const fn = tool.function;
    if (!isObject(fn))
      throw fn === undefined
        ? invalid(`${param}.function`, `Missing required parameter: '${param}.function'.`, 'missing_required_parameter')
        : typeError(`${param}.function`, 'an object', fn);
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
    return definition;
  });
}

function parseStop(value: Json): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [value];
  if (!Array.isArray(value)) throw typeError('stop', 'a string or an array of 1 to 4 strings', value);
  if (value.length > MAX_STOP)
    throw invalid(
      'stop',
      `Invalid 'stop': array too long. Expected an array with at most ${MAX_STOP} strings, but got ${value.length}.`,
      'array_above_max_length',
    );
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

/**
 * Validates a parsed JSON body and converts it. Throws a RequestError (400) naming the first
 * offending field.
 */
export function parseChatRequest(original: Json): ParsedChatRequest {
  if (!isObject(original)) {
    throw invalid(null, `The request body must be a JSON object, but got ${describe(original)}.`, 'invalid_body');
  }
  const model = original.model;
  if (model === undefined || model === null) throw invalid('model', "Missing required parameter: 'model'.", 'missing_required_parameter');
  if (typeof model !== 'string') throw typeError('model', 'a string', model);
  if (model.length === 0) throw invalid('model', "Invalid value for 'model': the model id must not be empty.", 'invalid_value');

  const messages = original.messages;
  if (messages === undefined || messages === null) throw invalid('messages', "Missing required parameter: 'messages'.", 'missing_required_parameter');
  if (!Array.isArray(messages)) throw typeError('messages', 'an array of messages', messages);
  if (messages.length === 0) throw invalid('messages', "Invalid 'messages': empty array. Expected an array with at least 1 message.", 'empty_array');
  const { body: modern, legacy: legacyFunctions } = translateLegacyFunctions(original, messages);
  const body = modern;
  const traits = { vision: false };
  const request: ChatRequest = { model, messages: (body.messages as Json[]).map((message, index) => parseMessage(message, index, traits)) };

  const temperature = optionalNumber(body, 'temperature', 0, 2);
  if (temperature !== undefined) request.temperature = temperature;
  const topP = optionalNumber(body, 'top_p', 0, 1);
  if (topP !== undefined) request.top_p = topP;
  const n = optionalInteger(body, 'n', 1, MAX_N);
  if (n !== undefined) request.n = n;
  request.stop = parseStop(body.stop);
  const maxTokens = optionalInteger(body, 'max_tokens', 1, MAX_INT32);
  const maxCompletionTokens = optionalInteger(body, 'max_completion_tokens', 1, MAX_INT32);
  if (maxCompletionTokens !== undefined) {
    request.max_tokens = maxCompletionTokens;
    request.max_tokens_is_completion_tokens = true;
  } else if (maxTokens !== undefined) {
    request.max_tokens = maxTokens;
  }
  const presence = optionalNumber(body, 'presence_penalty', -2, 2);
  if (presence !== undefined) request.presence_penalty = presence;
  const frequency = optionalNumber(body, 'frequency_penalty', -2, 2);
  if (frequency !== undefined) request.frequency_penalty = frequency;
  const seed = optionalInteger(body, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  if (seed !== undefined) request.seed = seed;

  let needsTools = false;
  if (body.tools !== undefined && body.tools !== null) {
    request.tools = parseTools(body.tools);
    needsTools = request.tools.length > 0;
  }
  const toolChoice = body.tool_choice;
  if (toolChoice !== undefined && toolChoice !== null) {
    const toolNames = new Set((request.tools ?? []).map((tool) => tool.function?.name));
    if (typeof toolChoice === 'string') {
      const mode = oneOf(toolChoice, ['none', 'auto', 'required'] as const, 'tool_choice');
      if (mode !== 'none' && toolNames.size === 0)
        throw invalid('tool_choice', `Invalid value for 'tool_choice': '${mode}' is only allowed when 'tools' are specified.`, 'invalid_value');
      request.tool_choice = { mode };
    } else if (isObject(toolChoice)) {
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
      request.tool_choice = { function_name: name };
    } else {
      throw typeError('tool_choice', '\'none\', \'auto\', \'required\' or {"type": "function", "function": {"name": ...}}', toolChoice);
    }
  }
  const parallel = optionalBoolean(body, 'parallel_tool_calls');
  // Accepted without tools too, as OpenAI does; it then has no effect.
  if (parallel !== undefined) request.parallel_tool_calls = parallel;

  let needsJsonMode = false;
  const format = body.response_format;
  if (format !== undefined && format !== null) {
    if (!isObject(format)) throw typeError('response_format', 'an object', format);
    const type = oneOf(format.type ?? null, ['text', 'json_object', 'json_schema'] as const, 'response_format.type');
    request.response_format = { type };
    needsJsonMode = type !== 'text';
    if (type === 'json_schema') {
      const schema = format.json_schema;
      if (!isObject(schema))
        throw schema === undefined
          ? invalid('response_format.json_schema', "Missing required parameter: 'response_format.json_schema'.", 'missing_required_parameter')
          : typeError('response_format.json_schema', 'an object', schema);
      const name = requiredString(schema, 'name', 'response_format.json_schema.name');
      if (!FUNCTION_NAME.test(name))
        throw invalid(
          'response_format.json_schema.name',
          "Invalid 'response_format.json_schema.name': expected 1 to 64 characters from a-z, A-Z, 0-9, underscores and dashes.",
          'invalid_value',
        );
      request.response_format.json_schema = { name };
      const description = optionalString(schema, 'description', 'response_format.json_schema.description');
      if (description !== undefined) request.response_format.json_schema.description = description;
      if (schema.schema !== undefined && schema.schema !== null)
        request.response_format.json_schema.schema_json = schemaJson(schema.schema, 'response_format.json_schema.schema');
      const strict = optionalBoolean(schema, 'strict', 'response_format.json_schema.strict');
      if (strict !== undefined) request.response_format.json_schema.strict = strict;
    }
  }

  const stream = optionalBoolean(body, 'stream') ?? false;
  request.stream = stream;
  let includeUsage = false;
  const streamOptions = body.stream_options;
  if (streamOptions !== undefined && streamOptions !== null) {
    if (!stream)
      throw invalid('stream_options', "Invalid value for 'stream_options': 'stream_options' is only allowed when 'stream' is true.", 'invalid_value');
    if (!isObject(streamOptions)) throw typeError('stream_options', 'an object', streamOptions);
    includeUsage = optionalBoolean(streamOptions, 'include_usage', 'stream_options.include_usage') ?? false;
    request.stream_options = { include_usage: includeUsage };
  }

  const logprobs = optionalBoolean(body, 'logprobs');
  if (logprobs !== undefined) request.logprobs = logprobs;
  const topLogprobs = optionalInteger(body, 'top_logprobs', 0, 20);
  if (topLogprobs !== undefined) {
    if (!logprobs) throw invalid('top_logprobs', "Invalid value for 'top_logprobs': 'logprobs' must be true when 'top_logprobs' is set.", 'invalid_value');
    request.top_logprobs = topLogprobs;
  }
  const logitBias = body.logit_bias;
  if (logitBias !== undefined && logitBias !== null) {
    if (!isObject(logitBias)) throw typeError('logit_bias', 'an object mapping token ids to numbers from -100 to 100', logitBias);
    if (keyCountUpTo(logitBias, MAX_LOGIT_BIAS) > MAX_LOGIT_BIAS)
      throw invalid('logit_bias', `Invalid 'logit_bias': at most ${MAX_LOGIT_BIAS} tokens may be biased.`, 'invalid_value');
    request.logit_bias = {};
    for (const [token, bias] of Object.entries(logitBias)) {
      if (!/^\d+$/.test(token))
        throw invalid(`logit_bias.${truncate(token, 20)}`, `Invalid key in 'logit_bias': '${truncate(token, 20)}' is not a token id.`, 'invalid_value');
      if (typeof bias !== 'number' || bias < -100 || bias > 100)
        throw invalid(`logit_bias.${token}`, `Invalid value for 'logit_bias.${token}': expected a number from -100 to 100.`, 'invalid_value');
      request.logit_bias[token] = Math.round(bias);
    }
  }
  const user = optionalString(body, 'user');
  if (user !== undefined) request.user = user;
  const metadata = body.metadata;
  if (metadata !== undefined && metadata !== null) {
    if (!isObject(metadata)) throw typeError('metadata', 'an object of string values', metadata);
    if (keyCountUpTo(metadata, MAX_METADATA_KEYS) > MAX_METADATA_KEYS)
      throw invalid('metadata', `Invalid 'metadata': at most ${MAX_METADATA_KEYS} keys are allowed.`, 'invalid_value');
    const entries = Object.entries(metadata);
    request.metadata = {};
    for (const [key, value] of entries) {
      if (key.length > 64) throw invalid('metadata', "Invalid 'metadata': keys must be at most 64 characters.", 'invalid_value');
      if (typeof value !== 'string') throw typeError(`metadata.${truncate(key, 64)}`, 'a string', value);
      if (value.length > 512) throw invalid(`metadata.${key}`, `Invalid 'metadata.${key}': values must be at most 512 characters.`, 'invalid_value');
      request.metadata[key] = value;
    }
  }
  optionalBoolean(body, 'store');
  const effort = body.reasoning_effort;
  if (effort !== undefined && effort !== null) request.reasoning_effort = oneOf(effort, ['minimal', 'low', 'medium', 'high'] as const, 'reasoning_effort');
  const tier = optionalString(body, 'service_tier');
  if (tier !== undefined) request.service_tier = tier;

  const routePolicy = optionalString(body, 'route_policy');
  if (routePolicy !== undefined && (routePolicy.length === 0 || routePolicy.length > 64)) {
    throw invalid(
      'route_policy',
      "Invalid value for 'route_policy': expected 'balanced', 'cheapest', 'fastest', 'best', 'score>=X' or 'tier>=T'.",
      'invalid_value',
    );
  }

  let fallbacks: string[] | boolean | undefined;
  const fallbackValue = body.fallbacks;
  if (typeof fallbackValue === 'boolean') fallbacks = fallbackValue;
  else if (Array.isArray(fallbackValue)) {
    if (fallbackValue.length > MAX_FALLBACKS)
      throw invalid(
        'fallbacks',
        `Invalid 'fallbacks': array too long. Expected at most ${MAX_FALLBACKS} model ids, but got ${fallbackValue.length}.`,
        'array_above_max_length',
      );
    fallbacks = fallbackValue.map((id, index) => {
      if (typeof id !== 'string' || id.length === 0) throw typeError(`fallbacks[${index}]`, 'a model id', id);
      if (id === 'auto') throw invalid(`fallbacks[${index}]`, "Invalid value for 'fallbacks': 'auto' cannot be a fallback; name a model.", 'invalid_value');
      return id;
    });
  } else if (fallbackValue !== undefined && fallbackValue !== null) {
    throw typeError('fallbacks', 'true, false or an array of model ids', fallbackValue);
  }

  return {
    request,
    stream,
    includeUsage,
    needsTools,
    needsVision: traits.vision,
    needsJsonMode,
    routePolicy,
    fallbacks,
    ...(legacyFunctions ? { legacyFunctions } : {}),
  };
}
