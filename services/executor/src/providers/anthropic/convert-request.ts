/**
 * Message conversion: a validated gateway ChatRequest (OpenAI-shaped, proto-loader output) ->
 * Anthropic's Messages API body.
 *
 * - system and developer messages, wherever they are, become the top-level `system` (joined by a
 *   blank line): the Messages API has no system role inside `messages`;
 * - tool messages become user messages of `tool_result` blocks, and consecutive messages of one
 *   role are merged into one, because roles must alternate;
 * - assistant tool_calls become `tool_use` blocks whose `input` is the parsed arguments object:
 *   arguments that are not a JSON object are the caller's mistake, an INVALID_ARGUMENT before any
 *   paid call;
 * - images: data URLs -> base64 sources, http(s) URLs -> url sources; a PDF data URL file part ->
 *   a document block; audio and file ids have no Anthropic equivalent (INVALID_ARGUMENT);
 * - `max_tokens` is required: the caller's, else the catalog model's max_output_tokens;
 * - OpenAI-only sampling fields Anthropic lacks (seed, penalties, logit_bias, logprobs) are not
 *   sent; `n > 1` and JSON response formats cannot be honoured and are refused;
 * - cache breakpoints (`cache_control`) go on the matching blocks: a part's on its block, a
 *   message's on its last block (a system message's on its system block: `system` is then a list
 *   of text blocks, one per system message, or one per text part of a system message whose parts
 *   carry breakpoints), a tool's on the tool. A ttl other than 5m and 1h is
 *   the caller's mistake (INVALID_ARGUMENT);
 * - extended thinking: the request's `thinking` as Anthropic's (`enabled` with its budget,
 *   `adaptive`, `disabled`), and the `thinking` and `redacted_thinking` blocks of earlier assistant
 *   turns sent back unchanged, in their place among the turn's text and `tool_use` blocks (a
 *   tool call's place holder part puts its `tool_use` there; calls without one follow the parts),
 *   as Anthropic requires when thinking is on with tool use. Sampling fields are passed as the
 *   caller set them: Anthropic itself refuses what thinking does not allow.
 */
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput, ContentPartOutput, MessageOutput } from '@gateway/proto';
import { invalidRequest, notAUrl, unknownRole, parseArgumentsObject, parseDataUrl, parseJsonField } from '../parse-json-field.js';
import type {
  AnthropicContentBlock,
  AnthropicImageBlock,
  AnthropicMessage,
  AnthropicRequest,
  AnthropicTextBlock,
  AnthropicThinking,
  AnthropicTool,
  AnthropicToolChoice,
  AnthropicToolUseBlock,
} from './wire-types.js';
import { ANTHROPIC_PROVIDER } from '../provider-names.js';
import { ProviderRefusal } from '../provider-refusal.js';
import { cacheControlOf, withCacheControl } from './cache-control.js';
import { systemOf } from './convert-system.js';

/** The media types Anthropic's document blocks accept from a data URL. */
const DOCUMENT_MEDIA_TYPES = new Set(['application/pdf', 'text/plain']);

function imageBlock(url: string, param: string): AnthropicImageBlock {
  const data = parseDataUrl(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw notAUrl(param);
}

function partBlock(part: ContentPartOutput, param: string): AnthropicContentBlock | undefined {
  const block = contentOfPart(part, param);
  return block && withCacheControl(block, cacheControlOf(part.cache_control, `${param}.cache_control`));
}

function contentOfPart(part: ContentPartOutput, param: string): AnthropicContentBlock | undefined {
  if (part.text !== undefined) return part.text === '' ? undefined : { type: 'text', text: part.text };
  if (part.image_url) return imageBlock(part.image_url.url ?? '', `${param}.image_url.url`);
  if (part.file) {
    const data = part.file.file_data ? parseDataUrl(part.file.file_data) : undefined;
    if (data && DOCUMENT_MEDIA_TYPES.has(data.mediaType)) return { type: 'document', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
    throw new ProviderRefusal(ANTHROPIC_PROVIDER, 'accepts files only as base64 data URLs of PDF or plain text (file_data); file ids are not supported.', {
      param: `${param}.file`,
      reason: 'unsupported_parameter',
    });
  }
  if (part.input_audio)
    throw new ProviderRefusal(ANTHROPIC_PROVIDER, 'does not accept audio input.', { param: `${param}.input_audio`, reason: 'unsupported_parameter' });
  if (part.thinking) return { type: 'thinking', thinking: part.thinking.thinking ?? '', signature: part.thinking.signature ?? '' };
  if (part.redacted_thinking) return { type: 'redacted_thinking', data: part.redacted_thinking.data ?? '' };
  // A refusal part is the assistant's own earlier refusal: there is nothing to send for it.
  return undefined;
}

/** The blocks of a message's content (text or parts); empty texts are dropped (Anthropic rejects them). */
function contentBlocks(message: MessageOutput, position: number): AnthropicContentBlock[] {
  if (message.content === 'parts' || message.parts) {
    return (message.parts?.parts ?? []).flatMap((part, index) => partBlock(part, `messages[${position}].content[${index}]`) ?? []);
  }
  if (typeof message.text === 'string' && message.text !== '') return [{ type: 'text', text: message.text }];
  return [];
}

/** The message's blocks, its own cache breakpoint on the last one. */
function messageBlocks(blocks: AnthropicContentBlock[], message: MessageOutput, position: number): AnthropicContentBlock[] {
  const control = cacheControlOf(message.cache_control, `messages[${position}].cache_control`);
  if (!control || blocks.length === 0) return blocks;
  return [...blocks.slice(0, -1), withCacheControl(blocks.at(-1)!, control)];
}

function toolResultContent(message: MessageOutput, position: number): string | Array<AnthropicTextBlock | AnthropicImageBlock> {
  if (message.content === 'parts' || message.parts) {
    return contentBlocks(message, position).filter(
      (block): block is AnthropicTextBlock | AnthropicImageBlock => block.type === 'text' || block.type === 'image',
    );
  }
  return message.text ?? '';
}

/** A tool call of an assistant message as a `tool_use` block. */
function toolUseBlock(message: MessageOutput, position: number, index: number): AnthropicToolUseBlock {
  const call = message.tool_calls[index]!;
  const param = `messages[${position}].tool_calls[${index}].function.arguments`;
  return { type: 'tool_use', id: call.id ?? '', name: call.function?.name ?? '', input: parseArgumentsObject(call.function?.arguments ?? '', param) };
}

/**
 * An assistant message's blocks in the order the model wrote them: its parts (text, thinking),
 * each tool call at its place holder part, then the tool calls that have none.
 */
function assistantBlocks(message: MessageOutput, position: number): AnthropicContentBlock[] {
  const calls = message.tool_calls ?? [];
  const placed = new Set<number>();
  const blocks: AnthropicContentBlock[] = [];
  const parts = message.content === 'parts' || message.parts ? (message.parts?.parts ?? []) : undefined;
  if (!parts) blocks.push(...contentBlocks(message, position));
  parts?.forEach((part, index) => {
    if (part.tool_call_id === undefined) {
      const block = partBlock(part, `messages[${position}].content[${index}]`);
      if (block) blocks.push(block);
      return;
    }
    const callIndex = calls.findIndex((call, at) => call.id === part.tool_call_id && !placed.has(at));
    if (callIndex < 0) return;
    placed.add(callIndex);
    blocks.push(toolUseBlock(message, position, callIndex));
  });
  calls.forEach((_, index) => {
    if (!placed.has(index)) blocks.push(toolUseBlock(message, position, index));
  });
  return blocks;
}

/** The request's extended thinking in Anthropic's shape; undefined when the caller did not say. */
function thinkingOf(request: ChatRequestOutput): AnthropicThinking | undefined {
  const thinking = request.thinking;
  switch (thinking?.type) {
    case undefined:
    case '':
      return undefined;
    case 'enabled':
      if (thinking.budget_tokens === undefined) throw invalidRequest('thinking.budget_tokens is required when thinking is enabled.', 'thinking.budget_tokens');
      return { type: 'enabled', budget_tokens: thinking.budget_tokens };
    case 'adaptive':
    case 'disabled':
      return { type: thinking.type };
    default:
      throw invalidRequest('thinking.type must be "enabled", "adaptive" or "disabled".', 'thinking.type');
  }
}

/** One gateway message -> the role and blocks it contributes; undefined for system/developer. */
function convertMessage(message: MessageOutput, position: number): { role: 'user' | 'assistant'; blocks: AnthropicContentBlock[] } | undefined {
  switch (message.role) {
    case 'ROLE_SYSTEM':
    case 'ROLE_DEVELOPER':
      return undefined;
    case 'ROLE_USER':
      return { role: 'user', blocks: messageBlocks(contentBlocks(message, position), message, position) };
    case 'ROLE_ASSISTANT':
      return { role: 'assistant', blocks: messageBlocks(assistantBlocks(message, position), message, position) };
    case 'ROLE_TOOL': {
      if (!message.tool_call_id)
        throw invalidRequest(`messages[${position}].tool_call_id is required on a tool message.`, `messages[${position}].tool_call_id`);
      const result = { type: 'tool_result' as const, tool_use_id: message.tool_call_id, content: toolResultContent(message, position) };
      return { role: 'user', blocks: messageBlocks([result], message, position) };
    }
    default:
      throw unknownRole(position);
  }
}

/** The messages, roles alternating: consecutive messages of one role are merged, empty ones dropped. */
function alternatingMessages(request: ChatRequestOutput): AnthropicMessage[] {
  const merged: Array<{ role: 'user' | 'assistant'; blocks: AnthropicContentBlock[] }> = [];
  (request.messages ?? []).forEach((message, position) => {
    const converted = convertMessage(message, position);
    if (!converted || converted.blocks.length === 0) return;
    const last = merged.at(-1);
    if (last && last.role === converted.role) last.blocks.push(...converted.blocks);
    else merged.push({ role: converted.role, blocks: [...converted.blocks] });
  });
  return merged.map(({ role, blocks }) => {
    const only = blocks.length === 1 ? blocks[0] : undefined;
    // One plain text block is sent as a string; one with a cache breakpoint must stay a block.
    return { role, content: only?.type === 'text' && !only.cache_control ? only.text : blocks };
  });
}

function toolChoiceOf(request: ChatRequestOutput): AnthropicToolChoice | undefined {
  const choice = request.tool_choice;
  const disableParallel = request.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {};
  if (choice?.function_name) return { type: 'tool', name: choice.function_name, ...disableParallel };
  if (choice?.mode === 'none') return { type: 'none' };
  if (choice?.mode === 'required') return { type: 'any', ...disableParallel };
  if (choice?.mode === 'auto' || request.parallel_tool_calls === false) return { type: 'auto', ...disableParallel };
  return undefined;
}

/** Builds the Messages API body; throws INVALID_ARGUMENT for what cannot be translated. */
export function toAnthropicRequest(request: ChatRequestOutput, model: CatalogModel, stream: boolean): AnthropicRequest {
  if (request.n !== undefined && request.n > 1)
    throw new ProviderRefusal(ANTHROPIC_PROVIDER, 'returns one choice per request; n must be 1.', { param: 'n', reason: 'unsupported_parameter' });
  const format = request.response_format?.type;
  if (format === 'json_object' || format === 'json_schema') {
    throw new ProviderRefusal(ANTHROPIC_PROVIDER, 'has no JSON response format; remove response_format or choose a model with JSON mode.', {
      param: 'response_format',
      reason: 'unsupported_parameter',
    });
  }
  const body: AnthropicRequest = {
    model: model.upstream.model,
    max_tokens: request.max_tokens ?? model.max_output_tokens,
    messages: alternatingMessages(request),
  };
  const system = systemOf(request);
  // OpenAI answers a conversation of system messages alone; the Messages API requires a message,
  // so the instructions become the one user turn.
  if (system.text !== '' && body.messages.length === 0) body.messages = [{ role: 'user', content: system.blocks ?? system.text }];
  else if (system.text !== '') body.system = system.blocks ?? system.text;
  if (request.stop?.length) body.stop_sequences = [...request.stop];
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.tools?.length) {
    body.tools = request.tools.map((tool, position) => {
      const definition = tool.function;
      const converted: AnthropicTool = {
        name: definition?.name ?? '',
        ...(definition?.description !== undefined ? { description: definition.description } : {}),
        input_schema: definition?.parameters_json
          ? parseJsonField(definition.parameters_json, `tools[${position}].function.parameters`)
          : { type: 'object', properties: {} },
      };
      return withCacheControl(converted, cacheControlOf(tool.cache_control, `tools[${position}].cache_control`));
    });
    const choice = toolChoiceOf(request);
    if (choice) body.tool_choice = choice;
  }
  if (request.user !== undefined) body.metadata = { user_id: request.user };
  const thinking = thinkingOf(request);
  if (thinking) body.thinking = thinking;
  if (stream) body.stream = true;
  return body;
}
