/**
 * Message conversion: a validated gateway ChatRequest (proto-loader shape) -> OpenAI's JSON body.
 * Only what the caller set is sent, so a provider that rejects a field it does not support sees it
 * only when the caller asked for it. `metadata` is the gateway's own and is never forwarded
 * (OpenAI rejects it unless `store` is on). Anthropic's extended thinking (`thinking`, the thinking
 * blocks of earlier assistant turns, beta flags) is dropped: an upstream that speaks another
 * protocol cannot check a signed block.
 */
import type { CatalogModel } from '@gateway/catalog';
import { GatewayError } from '@gateway/grpc';
import type { ChatRequestOutput, ContentPartOutput, MessageOutput, RoleOutput } from '@gateway/proto';
import type { OpenAiChatRequest, OpenAiContentPart, OpenAiMessage } from './wire-types.js';
import { unknownRole } from '../parse-json-field.js';

const ROLES: Partial<Record<RoleOutput, OpenAiMessage['role']>> = {
  ROLE_SYSTEM: 'system',
  ROLE_DEVELOPER: 'developer',
  ROLE_USER: 'user',
  ROLE_ASSISTANT: 'assistant',
  ROLE_TOOL: 'tool',
};

function convertPart(part: ContentPartOutput): OpenAiContentPart | undefined {
  if (part.text !== undefined) return { type: 'text', text: part.text };
  if (part.image_url)
    return { type: 'image_url', image_url: { url: part.image_url.url ?? '', ...(part.image_url.detail ? { detail: part.image_url.detail } : {}) } };
  if (part.input_audio) return { type: 'input_audio', input_audio: { data: part.input_audio.data ?? '', format: part.input_audio.format ?? '' } };
  if (part.file) {
    const file = part.file;
    return {
      type: 'file',
      file: {
        ...(file.file_id ? { file_id: file.file_id } : {}),
        ...(file.file_data ? { file_data: file.file_data } : {}),
        ...(file.filename ? { filename: file.filename } : {}),
      },
    };
  }
  if (part.refusal !== undefined) return { type: 'refusal', refusal: part.refusal };
  return undefined;
}

/**
 * A system or developer message of text parts split only to carry cache breakpoints (the Messages
 * API's system blocks), as one string, the parts joined by a blank line as those blocks are when
 * they carry none: servers that speak OpenAI's protocol do not all take parts in a system message,
 * and a breakpoint means nothing to them. Undefined for any other message, parts sent by the caller
 * without a breakpoint included (they go as they came).
 */
function systemText(role: string, message: MessageOutput): string | undefined {
  if (role !== 'system' && role !== 'developer') return undefined;
  const parts = message.parts?.parts ?? [];
  if (!parts.some((part) => part.cache_control) || !parts.every((part) => typeof part.text === 'string')) return undefined;
  return parts.map((part) => part.text).join('\n\n');
}

/**
 * An assistant message whose parts carry thinking blocks (the Messages API's): its text alone, as
 * one string, or null for none; undefined for any other message. Thinking is not sent to a
 * translated upstream: its signature is Anthropic's and means nothing there.
 */
function textWithoutThinking(message: MessageOutput): string | null | undefined {
  const parts = message.parts?.parts ?? [];
  if (!parts.some((part) => part.thinking || part.redacted_thinking || part.tool_call_id !== undefined)) return undefined;
  const text = parts.flatMap((part) => (part.text === undefined ? [] : [part.text])).join('');
  return text === '' ? null : text;
}

function convertMessage(message: MessageOutput, position: number): OpenAiMessage {
  const role = message.role ? ROLES[message.role] : undefined;
  if (!role) throw unknownRole(position);
  let content: OpenAiMessage['content'];
  const withoutThinking = textWithoutThinking(message);
  if (withoutThinking !== undefined) content = withoutThinking;
  else if (message.content === 'parts' || message.parts)
    content = systemText(role, message) ?? (message.parts?.parts ?? []).flatMap((part) => convertPart(part) ?? []);
  else if (typeof message.text === 'string') content = message.text;
  else content = null;
  const converted: OpenAiMessage = { role, content };
  if (message.name !== undefined) converted.name = message.name;
  if (message.tool_calls?.length) {
    converted.tool_calls = message.tool_calls.map((call) => ({
      id: call.id ?? '',
      type: 'function',
      function: { name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' },
    }));
  }
  if (message.tool_call_id !== undefined) converted.tool_call_id = message.tool_call_id;
  if (message.refusal !== undefined) converted.refusal = message.refusal;
  return converted;
}

function parseJson(text: string, param: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw GatewayError.of('invalid_request', `${param} is not valid JSON.`, { param });
  }
}

/** Builds the upstream request body; `stream` also asks for the usage chunk, which the StreamEnd needs. */
export function toOpenAiRequest(request: ChatRequestOutput, model: CatalogModel, stream: boolean): OpenAiChatRequest {
  const body: OpenAiChatRequest = {
    model: model.upstream.model,
    messages: (request.messages ?? []).map(convertMessage),
  };
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.n !== undefined) body.n = request.n;
  if (request.stop?.length) body.stop = [...request.stop];
  if (request.max_tokens !== undefined) {
    if (request.max_tokens_is_completion_tokens) body.max_completion_tokens = request.max_tokens;
    else body.max_tokens = request.max_tokens;
  }
  if (request.presence_penalty !== undefined) body.presence_penalty = request.presence_penalty;
  if (request.frequency_penalty !== undefined) body.frequency_penalty = request.frequency_penalty;
  if (request.seed !== undefined) body.seed = request.seed;
  if (request.tools?.length) {
    body.tools = request.tools.map((tool, position) => {
      const definition = tool.function;
      return {
        type: 'function',
        function: {
          name: definition?.name ?? '',
          ...(definition?.description !== undefined ? { description: definition.description } : {}),
          ...(definition?.parameters_json ? { parameters: parseJson(definition.parameters_json, `tools[${position}].function.parameters`) } : {}),
          ...(definition?.strict !== undefined ? { strict: definition.strict } : {}),
        },
      };
    });
  }
  const choice = request.tool_choice;
  if (choice?.function_name) body.tool_choice = { type: 'function', function: { name: choice.function_name } };
  else if (choice?.mode === 'none' || choice?.mode === 'auto' || choice?.mode === 'required') body.tool_choice = choice.mode;
  if (request.parallel_tool_calls !== undefined) body.parallel_tool_calls = request.parallel_tool_calls;
  const format = request.response_format;
  if (format?.type === 'text' || format?.type === 'json_object') body.response_format = { type: format.type };
  else if (format?.type === 'json_schema') {
    const schema = format.json_schema;
    body.response_format = {
      type: 'json_schema',
      json_schema: {
        name: schema?.name ?? '',
        ...(schema?.description !== undefined ? { description: schema.description } : {}),
        ...(schema?.schema_json ? { schema: parseJson(schema.schema_json, 'response_format.json_schema.schema') } : {}),
        ...(schema?.strict !== undefined ? { strict: schema.strict } : {}),
      },
    };
  }
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  if (request.user !== undefined) body.user = request.user;
  if (request.logprobs !== undefined) body.logprobs = request.logprobs;
  if (request.top_logprobs !== undefined) body.top_logprobs = request.top_logprobs;
  if (request.logit_bias && Object.keys(request.logit_bias).length > 0) body.logit_bias = { ...request.logit_bias };
  if (request.reasoning_effort !== undefined) body.reasoning_effort = request.reasoning_effort;
  if (request.service_tier !== undefined) body.service_tier = request.service_tier;
  return body;
}
