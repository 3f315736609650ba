/**
 * Translates a body of Anthropic's Messages API (POST /v1/messages, and /v1/messages/count_tokens)
 * into the gateway's own request: the chat-completions body it means, validated and converted by
 * the one chat parser (parse-chat-request.ts), so every provider and the simulated models answer
 * it. A 400 of that parser is renamed back to the Messages field it came from (`messages[2].content`
 * becomes the Messages index it was translated from, `max_tokens` stays `max_tokens`).
 *
 * Claude Code must work as it is, so what an upstream cannot use is translated or dropped, never
 * refused (the rules, as docs/messages.md documents them):
 * - `system` (a string or text blocks) and any `system`-role message inside `messages` are folded,
 *   in order, into one leading system message: its text (the blocks joined by a blank line), or,
 *   when a block carries a cache breakpoint, one text part per block so that each breakpoint stays
 *   on its own block upstream;
 * - content blocks: `text` as text, `image` (base64 or url source) as an image part, `document`
 *   (base64 PDF as a file part, plain-text source as text); `tool_use` blocks of an assistant
 *   message become its tool calls (`input` as JSON arguments); `tool_result` blocks of a user
 *   message become tool messages before the rest of it (their text; an image in them is noted as
 *   omitted; `is_error` prefixes `Error: `); server-tool blocks (`server_tool_use`,
 *   `web_search_tool_result`, ...) and unknown block types are dropped;
 * - extended thinking: `thinking` (`enabled` with `budget_tokens`, `adaptive`, `disabled`) is kept,
 *   and so are the `thinking` (with its `signature`) and `redacted_thinking` (`data`) blocks of an
 *   assistant message, unchanged and in their place among its text and `tool_use` blocks (each
 *   tool use marked by a place-holder part), since Anthropic requires them back, first in the turn,
 *   when thinking is on with tool use. An anthropic upstream gets them; a translated one (OpenAI's
 *   protocol, Gemini) drops them, as a signed block means nothing there. An assistant message of
 *   thinking alone is dropped;
 * - the `anthropic-beta` header's flags (comma-separated, one header or several) go with the
 *   request to an anthropic upstream;
 * - `cache_control` (`{type: "ephemeral", ttl?: "5m" | "1h"}`, anything else a 400) is kept where
 *   Anthropic allows it: on a text, image or document block as that part's breakpoint, on a
 *   `tool_result` as its tool message's, on a `tool_use` as its assistant message's (the last
 *   block upstream: a breakpoint on an earlier tool call moves to the last one), on a tool as that
 *   tool's (a dropped tool's breakpoint is dropped with it); blocks inside a tool result lose theirs
 *   (the result is flattened to text). Providers that take breakpoints (anthropic) get them;
 * - `tools`: custom tools (no `type`, or `custom`) as functions with `input_schema` as their
 *   parameters; Anthropic's server and client-defined tool types (`web_search_20250305`,
 *   `bash_20250124`, `text_editor_*`, `computer_*`, ...) are dropped; a `tool_choice` naming a
 *   dropped tool becomes `auto`, and with no tool left it is dropped;
 * - `tool_choice`: `auto`, `any` (`required`), `tool` (that function), `none`;
 *   `disable_parallel_tool_use` becomes `parallel_tool_calls: false`;
 * - `stop_sequences` become `stop`, `metadata.user_id` `user`; `temperature`, `top_p` as they are;
 *   `top_k`, `context_management`, `output_config`, `service_tier`, `container`,
 *   `mcp_servers` and every other unknown top-level field are accepted and unused.
 *
 * One piece: the whole translation of one API's body, a function per block and field, and the
 * renaming of the chat parser's errors, which needs the positions each of them kept.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ContentPart, Message, ThinkingConfig } from '@gateway/proto';
import { type ParsedChatRequest, parseChatRequest } from './parse-chat-request.js';
import { invalid, RequestError } from '../request-error.js';
import { type FieldSource, given, isObject, type Json, type JsonObject, kindOf, renamedError, wrongType } from './translated-request.js';

/** The chat body being built, and where each of its messages came from (chat param -> Messages param). */
interface Translation {
  system: SystemBlock[];
  messages: JsonObject[];
  sources: FieldSource[];
  /** The assistant messages that carry thinking blocks: their chat index and their blocks' order. */
  thinkingTurns: ThinkingTurn[];
}

/**
 * An assistant message with thinking: the order of its blocks, put back on the parsed message
 * (the chat parser knows no thinking parts): a thinking part itself, `text` for its next text
 * part, `tool` for a place holder of that call.
 */
interface ThinkingTurn {
  index: number;
  layout: Array<ContentPart | 'text' | { tool: string }>;
}

/** The largest budget_tokens: a protobuf int32. */
const MAX_INT32 = 2_147_483_647;

/** One block of the system text, with the cache breakpoint it carried. */
interface SystemBlock {
  text: string;
  cache_control?: JsonObject;
}

/** Top-level fields whose Messages name differs from the chat one. */
const RENAMED_FIELDS: readonly FieldSource[] = [
  ['stop', 'stop_sequences'],
  ['user', 'metadata.user_id'],
  ['tool_choice.function.name', 'tool_choice.name'],
];

function missing(param: string): RequestError {
  return invalid(param, `Missing required parameter: '${param}'.`, 'missing_required_parameter');
}

/**
 * A block's `cache_control`, checked (type `ephemeral`, ttl `5m` or `1h` when given); undefined
 * when absent or null.
 */
function cacheControl(block: JsonObject, param: string): JsonObject | undefined {
  const value = block.cache_control;
  if (!given(value)) return undefined;
  const controlParam = `${param}.cache_control`;
  if (!isObject(value)) throw wrongType(controlParam, 'an object', value);
  if (value.type !== 'ephemeral') throw invalid(`${controlParam}.type`, `Invalid value for '${controlParam}.type': supported values are 'ephemeral'.`);
  if (!given(value.ttl)) return { type: 'ephemeral' };
  if (value.ttl !== '5m' && value.ttl !== '1h')
    throw invalid(`${controlParam}.ttl`, `Invalid value for '${controlParam}.ttl': supported values are '5m' and '1h'.`);
  return { type: 'ephemeral', ttl: value.ttl };
}

/** The target with the block's checked `cache_control` set, when the block has one. */
function withCacheControl(target: JsonObject, block: JsonObject, param: string): JsonObject {
  const control = cacheControl(block, param);
  if (control) target.cache_control = control;
  return target;
}

/** The blocks of a `system` value or of a system-role message's content: a string, or text blocks. */
function systemBlocks(value: Json, param: string): SystemBlock[] {
  if (typeof value === 'string') return [{ text: value }];
  if (!Array.isArray(value)) throw wrongType(param, 'a string or an array of text blocks', value);
  return value.map((block, index) => {
    if (!isObject(block) || typeof block.text !== 'string')
      throw wrongType(`${param}[${index}].text`, 'a string', isObject(block) ? (block.text ?? null) : block);
    const control = cacheControl(block, `${param}[${index}]`);
    return control ? { text: block.text, cache_control: control } : { text: block.text };
  });
}

/**
 * The leading system message's content: the blocks' text joined by a blank line, or, when one of
 * them carries a breakpoint, one text part per block (each with its breakpoint).
 */
function systemContent(blocks: readonly SystemBlock[]): Json {
  const kept = blocks.filter((block) => block.text.length > 0);
  if (kept.length === 0) return undefined;
  if (!kept.some((block) => block.cache_control)) return kept.map((block) => block.text).join('\n\n');
  return kept.map((block) => ({ type: 'text', ...block }));
}

/** An image block's source as a chat image part. */
function imagePart(block: JsonObject, param: string): JsonObject {
  const source = block.source;
  if (!isObject(source)) throw missing(`${param}.source`);
  if (source.type === 'url') return { type: 'image_url', image_url: { url: source.url } };
  if (source.type === 'base64') return { type: 'image_url', image_url: { url: `data:${String(source.media_type)};base64,${String(source.data)}` } };
  throw invalid(`${param}.source.type`, `Invalid value for '${param}.source.type': supported values are 'base64' and 'url'.`);
}

/** A document block: a base64 PDF as a file part, a plain-text source as text; any other source dropped. */
function documentPart(block: JsonObject): JsonObject | undefined {
  const source = isObject(block.source) ? block.source : {};
  if (source.type === 'text' && typeof source.data === 'string') return { type: 'text', text: source.data };
  if (source.type === 'base64') {
    const filename = typeof block.title === 'string' ? block.title : 'document.pdf';
    return { type: 'file', file: { file_data: `data:${String(source.media_type)};base64,${String(source.data)}`, filename } };
  }
  return undefined;
}

/** A content block of a user message as a chat part with its breakpoint; undefined for a dropped block. */
function contentPart(block: JsonObject, param: string): JsonObject | undefined {
  const part = contentOfBlock(block, param);
  return part && withCacheControl(part, block, param);
}

function contentOfBlock(block: JsonObject, param: string): JsonObject | undefined {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
      return imagePart(block, param);
    case 'document':
      return documentPart(block);
    default:
      return undefined;
  }
}

/** The text of a `tool_result` block's content: a string, or its text blocks (other blocks noted as omitted). */
function toolResultText(block: JsonObject, param: string): string {
  const content = block.content;
  let text: string;
  if (!given(content)) text = '';
  else if (typeof content === 'string') text = content;
  else if (Array.isArray(content)) {
    text = content
      .map((part) =>
        isObject(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : `[${isObject(part) ? String(part.type) : 'content'} omitted]`,
      )
      .join('\n');
  } else throw wrongType(`${param}.content`, 'a string or an array of content blocks', content);
  return block.is_error === true ? `Error: ${text}` : text;
}

/** Adds a chat message, remembering the Messages param it came from. */
function push(out: Translation, message: JsonObject, param: string): void {
  out.sources.push([`messages[${out.messages.length}]`, param]);
  out.messages.push(message);
}

/** A user message: its tool results as tool messages first, then the rest of its content (if any). */
function translateUser(blocks: Json[], param: string, out: Translation): void {
  const parts: JsonObject[] = [];
  blocks.forEach((block, index) => {
    const blockParam = `${param}.content[${index}]`;
    if (!isObject(block)) throw wrongType(blockParam, 'a content block object', block);
    if (block.type === 'tool_result') {
      if (typeof block.tool_use_id !== 'string') throw wrongType(`${blockParam}.tool_use_id`, 'a string', block.tool_use_id ?? null);
      out.sources.push([`messages[${out.messages.length}].tool_call_id`, `${blockParam}.tool_use_id`]);
      const message = { role: 'tool', tool_call_id: block.tool_use_id, content: toolResultText(block, blockParam) };
      push(out, withCacheControl(message, block, blockParam), blockParam);
      return;
    }
    const part = contentPart(block, blockParam);
    if (part) parts.push(part);
  });
  if (parts.length > 0) push(out, { role: 'user', content: parts }, `${param}.content`);
}

/** A `thinking` or `redacted_thinking` block as a thinking part, checked; undefined for any other block. */
function thinkingPart(block: JsonObject, param: string): ContentPart | undefined {
  if (block.type === 'thinking') {
    if (typeof block.thinking !== 'string') throw wrongType(`${param}.thinking`, 'a string', block.thinking ?? null);
    if (typeof block.signature !== 'string') throw wrongType(`${param}.signature`, 'a string', block.signature ?? null);
    return { thinking: { thinking: block.thinking, signature: block.signature } };
  }
  if (block.type === 'redacted_thinking') {
    if (typeof block.data !== 'string') throw wrongType(`${param}.data`, 'a string', block.data ?? null);
    return { redacted_thinking: { data: block.data } };
  }
  return undefined;
}

/** A `tool_use` block as a chat tool call, its params remembered. */
function toolCall(block: JsonObject, blockParam: string, call: string, out: Translation): JsonObject {
  if (typeof block.id !== 'string') throw wrongType(`${blockParam}.id`, 'a string', block.id ?? null);
  if (typeof block.name !== 'string') throw wrongType(`${blockParam}.name`, 'a string', block.name ?? null);
  out.sources.push([`${call}.function.name`, `${blockParam}.name`], [`${call}.function.arguments`, `${blockParam}.input`], [call, blockParam]);
  return { id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } };
}

/**
 * An assistant message: its text, its `tool_use` blocks as tool calls, and its thinking blocks in
 * their place (see ThinkingTurn). Text blocks are joined into one string, or kept as text parts
 * when one carries a breakpoint or the message has thinking; a `tool_use` block's breakpoint
 * becomes the message's (the last block upstream).
 */
function translateAssistant(blocks: Json[], param: string, out: Translation): void {
  const texts: JsonObject[] = [];
  const calls: JsonObject[] = [];
  const layout: ThinkingTurn['layout'] = [];
  const message: JsonObject = { role: 'assistant' };
  const chatParam = `messages[${out.messages.length}]`;
  blocks.forEach((block, index) => {
    const blockParam = `${param}.content[${index}]`;
    if (!isObject(block)) throw wrongType(blockParam, 'a content block object', block);
    const thinking = thinkingPart(block, blockParam);
    if (thinking) layout.push(thinking);
    else if (block.type === 'text' && typeof block.text === 'string') {
      texts.push(withCacheControl({ type: 'text', text: block.text }, block, blockParam));
      layout.push('text');
    } else if (block.type === 'tool_use') {
      calls.push(toolCall(block, blockParam, `${chatParam}.tool_calls[${calls.length}]`, out));
      layout.push({ tool: block.id as string });
      withCacheControl(message, block, blockParam);
    }
  });
  if (texts.length === 0 && calls.length === 0) return;
  const hasThinking = layout.some((entry) => typeof entry === 'object' && !('tool' in entry));
  if (hasThinking) out.thinkingTurns.push({ index: out.messages.length, layout });
  message.content = hasThinking ? (texts.length > 0 ? texts : null) : assistantContent(texts);
  if (calls.length > 0) message.tool_calls = calls;
  push(out, message, `${param}.content`);
}

/** An assistant message's text: null for none, one string, or text parts when one carries a breakpoint. */
function assistantContent(texts: readonly JsonObject[]): Json {
  if (texts.length === 0) return null;
  if (texts.some((part) => part.cache_control)) return texts;
  return texts.map((part) => part.text).join('');
}

/** `messages`: each as one or more chat messages; a system-role message folded into the system text. */
function translateMessages(value: Json, out: Translation): void {
  if (!given(value)) throw missing('messages');
  if (!Array.isArray(value)) throw wrongType('messages', 'an array of messages', value);
  value.forEach((message, index) => {
    const param = `messages[${index}]`;
    if (!isObject(message)) throw wrongType(param, 'a message object', message);
    const { role, content } = message;
    if (!given(content)) throw missing(`${param}.content`);
    if (role === 'system') {
      out.system.push(...systemBlocks(content, `${param}.content`));
      return;
    }
    if (role !== 'user' && role !== 'assistant') {
      if (!given(role)) throw missing(`${param}.role`);
      throw invalid(`${param}.role`, `Invalid value for '${param}.role': supported values are 'user' and 'assistant'.`);
    }
    if (typeof content === 'string') push(out, { role, content }, param);
    else if (!Array.isArray(content)) throw wrongType(`${param}.content`, 'a string or an array of content blocks', content);
    else if (role === 'user') translateUser(content, param, out);
    else translateAssistant(content, param, out);
  });
}

/** `tools`: custom tools as functions; every typed (server or client-defined) tool dropped. */
function translateTools(value: Json, out: Translation): JsonObject[] {
  if (!given(value)) return [];
  if (!Array.isArray(value)) throw wrongType('tools', 'an array of tools', value);
  const tools: JsonObject[] = [];
  value.forEach((tool, index) => {
    if (!isObject(tool)) throw wrongType(`tools[${index}]`, 'a tool object', tool);
    if (given(tool.type) && tool.type !== 'custom') return;
    const chatParam = `tools[${tools.length}]`;
    out.sources.push(
      [`${chatParam}.function.parameters`, `tools[${index}].input_schema`],
      [`${chatParam}.function`, `tools[${index}]`],
      [chatParam, `tools[${index}]`],
    );
    const fn: JsonObject = { name: tool.name, parameters: tool.input_schema ?? { type: 'object', properties: {} } };
    if (typeof tool.description === 'string') fn.description = tool.description;
    tools.push(withCacheControl({ type: 'function', function: fn }, tool, `tools[${index}]`));
  });
  return tools;
}

/** `tool_choice` in the chat shape; undefined when there is no tool left to choose. */
function translateToolChoice(choice: Json, tools: readonly JsonObject[]): Json {
  if (!isObject(choice) || tools.length === 0) return undefined;
  switch (choice.type) {
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool': {
      const offered = tools.some((tool) => (tool.function as JsonObject).name === choice.name);
      return offered ? { type: 'function', function: { name: choice.name } } : 'auto';
    }
    default:
      return 'auto';
  }
}

/** The chat fields of a Messages body's settings: sampling, stop, user, tools and their choice. */
function settings(body: JsonObject, countOnly: boolean, out: Translation): JsonObject {
  if (!countOnly && !given(body.max_tokens)) throw missing('max_tokens');
  const tools = translateTools(body.tools, out);
  const choice = isObject(body.tool_choice) ? body.tool_choice : undefined;
  const stop = typeof body.stop_sequences === 'string' ? [body.stop_sequences] : body.stop_sequences;
  const metadata = isObject(body.metadata) ? body.metadata : {};
  const chat: JsonObject = {
    model: body.model,
    max_tokens: countOnly ? undefined : body.max_tokens,
    temperature: body.temperature,
    top_p: body.top_p,
    stream: countOnly ? undefined : body.stream,
    stop: Array.isArray(stop) && stop.length === 0 ? undefined : stop,
    user: metadata.user_id,
    tools: tools.length > 0 ? tools : undefined,
    tool_choice: translateToolChoice(choice, tools),
    parallel_tool_calls: tools.length > 0 && choice?.disable_parallel_tool_use === true ? false : undefined,
    route_policy: body.route_policy,
    fallbacks: body.fallbacks,
  };
  for (const [field, value] of Object.entries(chat)) if (!given(value)) delete chat[field];
  return chat;
}

/** `thinking`, checked: `enabled` with a positive integer `budget_tokens`, `adaptive` or `disabled`. */
function parseThinking(value: Json): ThinkingConfig | undefined {
  if (!given(value)) return undefined;
  if (!isObject(value)) throw wrongType('thinking', 'an object', value);
  switch (value.type) {
    case 'enabled': {
      const budget = value.budget_tokens;
      if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 1 || budget > MAX_INT32)
        throw wrongType('thinking.budget_tokens', 'a positive integer', budget ?? null);
      return { type: 'enabled', budget_tokens: budget };
    }
    case 'adaptive':
    case 'disabled':
      return { type: value.type };
    default:
      if (!given(value.type)) throw missing('thinking.type');
      throw invalid('thinking.type', "Invalid value for 'thinking.type': supported values are 'enabled', 'adaptive' and 'disabled'.");
  }
}

/** The `anthropic-beta` header's flags: comma-separated, in one header or several; empty for none. */
export function betaFlags(headers: IncomingHttpHeaders): string[] {
  const header = headers['anthropic-beta'];
  const values = Array.isArray(header) ? header : header === undefined ? [] : [header];
  return values.flatMap((value) => value.split(',')).flatMap((flag) => (flag.trim() === '' ? [] : [flag.trim()]));
}

/**
 * Puts each thinking turn's blocks back on its parsed message, in their order: its thinking parts,
 * its text parts (the chat parser's, breakpoints included) and a place holder per tool call.
 */
function restoreThinking(messages: Message[], turns: readonly ThinkingTurn[], offset: number): void {
  for (const { index, layout } of turns) {
    const message = messages[index + offset];
    if (!message) continue;
    const texts = [...(message.parts?.parts ?? [])];
    const parts = layout.flatMap((entry): ContentPart[] => {
      if (entry === 'text') return texts.length > 0 ? [texts.shift()!] : [];
      if ('tool' in entry) return [{ tool_call_id: entry.tool }];
      return [entry];
    });
    delete message.text;
    message.parts = { parts };
  }
}

/**
 * Validates a Messages body and converts it into the gateway's request. `countOnly` (count_tokens)
 * does not require `max_tokens`. `headers` (absent for count_tokens) give the `anthropic-beta`
 * flags. Throws a RequestError (400) naming the offending Messages field.
 */
export function parseMessagesRequest(
  original: Json,
  { countOnly = false, headers = {} }: { countOnly?: boolean; headers?: IncomingHttpHeaders } = {},
): ParsedChatRequest {
  if (!isObject(original)) throw invalid(null, `The request body must be a JSON object, but got ${kindOf(original)}.`, 'invalid_body');
  if (!given(original.model)) throw missing('model');
  const out: Translation = { system: given(original.system) ? systemBlocks(original.system, 'system') : [], messages: [], sources: [], thinkingTurns: [] };
  const chat = settings(original, countOnly, out);
  const thinking = parseThinking(original.thinking);
  translateMessages(original.messages, out);
  const system = systemContent(out.system);
  if (system !== undefined) {
    out.messages.unshift({ role: 'system', content: system });
    out.sources = out.sources.map(([chatParam, param]) => [
      chatParam.replace(/^messages\[(\d+)\]/, (_, index: string) => `messages[${Number(index) + 1}]`),
      param,
    ]);
    out.sources.push(['messages[0]', 'system']);
  }
  if (out.messages.length === 0) throw invalid('messages', "Invalid 'messages': at least one message with content is required.", 'empty_array');
  let parsed: ParsedChatRequest;
  try {
    parsed = parseChatRequest({ ...chat, messages: out.messages });
  } catch (error) {
    throw error instanceof RequestError ? renamedError(error, out.sources, RENAMED_FIELDS) : error;
  }
  restoreThinking(parsed.request.messages ?? [], out.thinkingTurns, system === undefined ? 0 : 1);
  if (thinking) parsed.request.thinking = thinking;
  const betas = betaFlags(headers);
  if (betas.length > 0) parsed.request.anthropic_betas = { flags: betas };
  return parsed;
}
