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
 *   sent; `n > 1` and JSON response formats cannot be honoured and are refused.
 */
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput, ContentPartOutput, MessageOutput } from '@gateway/proto';
import { invalidRequest, parseArgumentsObject, parseDataUrl, parseJsonField } from '../parse-json-field.js';
import type { AnthropicContentBlock, AnthropicImageBlock, AnthropicMessage, AnthropicRequest, AnthropicTextBlock, AnthropicToolChoice } from './wire-types.js';

/** The media types Anthropic's document blocks accept from a data URL. */
const DOCUMENT_MEDIA_TYPES = new Set(['application/pdf', 'text/plain']);

function imageBlock(url: string, param: string): AnthropicImageBlock {
  const data = parseDataUrl(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw invalidRequest(`${param} must be an http(s) URL or a base64 data URL.`, param);
}

function partBlock(part: ContentPartOutput, param: string): AnthropicContentBlock | undefined {
  if (part.text !== undefined) return part.text === '' ? undefined : { type: 'text', text: part.text };
  if (part.image_url) return imageBlock(part.image_url.url ?? '', `${param}.image_url.url`);
  if (part.file) {
    const data = part.file.file_data ? parseDataUrl(part.file.file_data) : undefined;
    if (data && DOCUMENT_MEDIA_TYPES.has(data.mediaType)) return { type: 'document', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
    throw invalidRequest(
      'The anthropic provider accepts files only as base64 data URLs of PDF or plain text (file_data); file ids are not supported.',
      `${param}.file`,
      'unsupported_parameter',
    );
  }
  if (part.input_audio) throw invalidRequest('The anthropic provider does not accept audio input.', `${param}.input_audio`, 'unsupported_parameter');
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

/** The text of a system or developer message. */
function systemText(message: MessageOutput): string {
  if (message.content === 'parts' || message.parts)
    return (message.parts?.parts ?? []).flatMap((part) => (part.text === undefined ? [] : [part.text])).join('\n');
  return message.text ?? '';
}

function toolResultContent(message: MessageOutput, position: number): string | Array<AnthropicTextBlock | AnthropicImageBlock> {
  if (message.content === 'parts' || message.parts) {
    return contentBlocks(message, position).filter(
      (block): block is AnthropicTextBlock | AnthropicImageBlock => block.type === 'text' || block.type === 'image',
    );
  }
  return message.text ?? '';
}

/** One gateway message -> the role and blocks it contributes; undefined for system/developer. */
function convertMessage(message: MessageOutput, position: number): { role: 'user' | 'assistant'; blocks: AnthropicContentBlock[] } | undefined {
  switch (message.role) {
    case 'ROLE_SYSTEM':
    case 'ROLE_DEVELOPER':
      return undefined;
    case 'ROLE_USER':
      return { role: 'user', blocks: contentBlocks(message, position) };
    case 'ROLE_ASSISTANT': {
      const blocks = contentBlocks(message, position);
      (message.tool_calls ?? []).forEach((call, index) => {
        const param = `messages[${position}].tool_calls[${index}].function.arguments`;
        blocks.push({
          type: 'tool_use',
          id: call.id ?? '',
          name: call.function?.name ?? '',
          input: parseArgumentsObject(call.function?.arguments ?? '', param),
        });
      });
      return { role: 'assistant', blocks };
    }
    case 'ROLE_TOOL': {
      if (!message.tool_call_id)
        throw invalidRequest(`messages[${position}].tool_call_id is required on a tool message.`, `messages[${position}].tool_call_id`);
      return { role: 'user', blocks: [{ type: 'tool_result', tool_use_id: message.tool_call_id, content: toolResultContent(message, position) }] };
    }
    default:
      throw invalidRequest(`messages[${position}].role is missing or unknown.`, `messages[${position}].role`);
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
    return { role, content: only?.type === 'text' ? only.text : blocks };
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
    throw invalidRequest('The anthropic provider returns one choice per request; n must be 1.', 'n', 'unsupported_parameter');
  const format = request.response_format?.type;
  if (format === 'json_object' || format === 'json_schema') {
    throw invalidRequest(
      'The anthropic provider has no JSON response format; remove response_format or choose a model with JSON mode.',
      'response_format',
      'unsupported_parameter',
    );
  }
  const body: AnthropicRequest = {
    model: model.upstream.model,
    max_tokens: request.max_tokens ?? model.max_output_tokens,
    messages: alternatingMessages(request),
  };
  const system = (request.messages ?? [])
    .filter((message) => message.role === 'ROLE_SYSTEM' || message.role === 'ROLE_DEVELOPER')
    .map(systemText)
    .filter((text) => text !== '');
  // OpenAI answers a conversation of system messages alone; the Messages API requires a message,
  // so the instructions become the one user turn.
  if (system.length > 0 && body.messages.length === 0) body.messages = [{ role: 'user', content: system.join('\n\n') }];
  else if (system.length > 0) body.system = system.join('\n\n');
  if (request.stop?.length) body.stop_sequences = [...request.stop];
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.tools?.length) {
    body.tools = request.tools.map((tool, position) => {
      const definition = tool.function;
      return {
        name: definition?.name ?? '',
        ...(definition?.description !== undefined ? { description: definition.description } : {}),
        input_schema: definition?.parameters_json
          ? parseJsonField(definition.parameters_json, `tools[${position}].function.parameters`)
          : { type: 'object', properties: {} },
      };
    });
    const choice = toolChoiceOf(request);
    if (choice) body.tool_choice = choice;
  }
  if (request.user !== undefined) body.metadata = { user_id: request.user };
  if (stream) body.stream = true;
  return body;
}
