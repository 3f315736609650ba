/**
 * Message conversion: a validated gateway ChatRequest -> Bedrock's Converse body. The gateway's
 * messages are first translated by the anthropic adapter's conversion (providers/anthropic), which
 * is where the gateway's knowledge of Claude's blocks lives: system prompts, alternating roles,
 * tool_use and tool_result blocks, cache breakpoints, and thinking blocks sent back with their
 * signatures. This file only re-spells those blocks in Converse's names:
 *
 * - text -> `text`; base64 images -> `image` bytes (png, jpeg, gif, webp; Converse takes no image
 *   URL, so an http(s) image is the caller's mistake, INVALID_ARGUMENT); PDF and plain-text
 *   documents -> `document` (each named, as Converse requires);
 * - tool_use -> `toolUse`, tool_result -> `toolResult` (`status: "error"` for is_error);
 * - thinking -> `reasoningContent.reasoningText { text, signature }`, redacted_thinking ->
 *   `reasoningContent.redactedContent` (the base64 bytes Bedrock sent), unchanged;
 * - a `cache_control` breakpoint -> a `cachePoint` block right after its block, system block or
 *   tool (Converse has no lifetimes: every breakpoint is the default five minutes);
 * - max_tokens, temperature, top_p, stop -> `inferenceConfig`; tools -> `toolConfig` with
 *   auto/any/tool choices. Converse has no "none" choice: the tools are then not offered, which
 *   is only possible while the conversation holds no tool call (INVALID_ARGUMENT otherwise);
 * - Claude's extended thinking and the beta flags Bedrock documents for Claude go in
 *   `additionalModelRequestFields` (`thinking`, `anthropic_beta`), the other flags (Anthropic's
 *   own API's) are not sent.
 *
 * An embeddings method would not use this file: Titan and Cohere embeddings go through
 * InvokeModel with their own bodies, in a convert-embeddings.ts beside it.
 */
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput } from '@gateway/proto';
import { toAnthropicRequest } from '../anthropic/convert-request.js';
import type { AnthropicContentBlock, AnthropicRequest, AnthropicTextBlock, AnthropicTool } from '../anthropic/wire-types.js';
import type {
  ConverseContentBlock,
  ConverseImage,
  ConverseMessage,
  ConverseRequest,
  ConverseSystemBlock,
  ConverseTool,
  ConverseToolChoice,
} from './wire-types.js';
import { BEDROCK_PROVIDER } from '../provider-names.js';
import { ProviderRefusal } from '../provider-refusal.js';

/** The cache breakpoint block of Converse. */
const CACHE_POINT = { cachePoint: { type: 'default' } } as const;

/** Image media types -> Converse's image formats. */
const IMAGE_FORMATS: Readonly<Record<string, ConverseImage['format']>> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

/** Document media types -> Converse's document formats. */
const DOCUMENT_FORMATS: Readonly<Record<string, string>> = { 'application/pdf': 'pdf', 'text/plain': 'txt' };

/**
 * The anthropic-beta flags Bedrock's Claude models accept in `anthropic_beta` (Bedrock's "Anthropic
 * Claude Messages API" parameters page); Bedrock refuses a request naming any other.
 */
const BEDROCK_BETAS = new Set([
  'interleaved-thinking-2025-05-14',
  'fine-grained-tool-streaming-2025-05-14',
  'token-efficient-tools-2025-02-19',
  'output-128k-2025-02-19',
  'context-1m-2025-08-07',
  'computer-use-2025-01-24',
  'computer-use-2024-10-22',
]);

/** Numbers the documents of one request, whose names Converse requires to be unique. */
class DocumentNames {
  private count = 0;
  next(): string {
    this.count += 1;
    return `document ${this.count}`;
  }
}

function imageOf(block: Extract<AnthropicContentBlock, { type: 'image' }>): ConverseImage {
  const format = block.source.type === 'base64' ? IMAGE_FORMATS[block.source.media_type.toLowerCase()] : undefined;
  if (block.source.type !== 'base64') {
    throw new ProviderRefusal(BEDROCK_PROVIDER, 'accepts images only as base64 data URLs (Converse takes no image URL).', {
      param: 'messages',
      reason: 'unsupported_parameter',
    });
  }
  if (!format)
    throw new ProviderRefusal(BEDROCK_PROVIDER, 'accepts png, jpeg, gif and webp images only.', { param: 'messages', reason: 'unsupported_parameter' });
  return { format, source: { bytes: block.source.data } };
}

/** One Anthropic block -> its Converse block, and a cachePoint after it when it carries a breakpoint. */
function blocksOf(block: AnthropicContentBlock, documents: DocumentNames): ConverseContentBlock[] {
  const converted = blockOf(block, documents);
  return block.cache_control ? [converted, CACHE_POINT] : [converted];
}

function blockOf(block: AnthropicContentBlock, documents: DocumentNames): ConverseContentBlock {
  switch (block.type) {
    case 'text':
      return { text: block.text };
    case 'image':
      return { image: imageOf(block) };
    case 'document': {
      const format = block.source.type === 'base64' ? DOCUMENT_FORMATS[block.source.media_type] : undefined;
      if (block.source.type !== 'base64' || !format)
        throw new ProviderRefusal(BEDROCK_PROVIDER, 'accepts PDF and plain-text documents as base64 only.', { param: 'messages' });
      return { document: { format, name: documents.next(), source: { bytes: block.source.data } } };
    }
    case 'tool_use':
      return { toolUse: { toolUseId: block.id, name: block.name, input: block.input } };
    case 'tool_result': {
      const content =
        typeof block.content === 'string'
          ? [{ text: block.content }]
          : block.content.map((part) => (part.type === 'text' ? { text: part.text } : { image: imageOf(part) }));
      return { toolResult: { toolUseId: block.tool_use_id, content, ...(block.is_error ? { status: 'error' as const } : {}) } };
    }
    case 'thinking':
      return { reasoningContent: { reasoningText: { text: block.thinking, ...(block.signature ? { signature: block.signature } : {}) } } };
    case 'redacted_thinking':
      return { reasoningContent: { redactedContent: block.data } };
  }
}

function messagesOf(body: AnthropicRequest, documents: DocumentNames): ConverseMessage[] {
  return body.messages.map((message) => ({
    role: message.role,
    content: typeof message.content === 'string' ? [{ text: message.content }] : message.content.flatMap((block) => blocksOf(block, documents)),
  }));
}

function systemOf(system: string | AnthropicTextBlock[]): ConverseSystemBlock[] {
  if (typeof system === 'string') return [{ text: system }];
  return system.flatMap((block) => (block.cache_control ? [{ text: block.text }, CACHE_POINT] : [{ text: block.text }]));
}

function toolsOf(tools: AnthropicTool[]): ConverseTool[] {
  return tools.flatMap((tool) => {
    const spec: ConverseTool = {
      toolSpec: { name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), inputSchema: { json: tool.input_schema } },
    };
    return tool.cache_control ? [spec, CACHE_POINT] : [spec];
  });
}

/** Whether a conversation holds tool calls or results (Converse then requires the tools). */
function holdsToolBlocks(messages: ConverseMessage[]): boolean {
  return messages.some((message) => message.content.some((block) => 'toolUse' in block || 'toolResult' in block));
}

/** The anthropic conversion's body; its refusals name this provider, whose caller chose a bedrock model. */
function anthropicBody(request: ChatRequestOutput, model: CatalogModel): AnthropicRequest {
  try {
    return toAnthropicRequest(request, model, false);
  } catch (error) {
    throw error instanceof ProviderRefusal ? error.naming(BEDROCK_PROVIDER) : error;
  }
}

/** Builds the Converse body; throws INVALID_ARGUMENT for what cannot be translated. */
export function toConverseRequest(request: ChatRequestOutput, model: CatalogModel): ConverseRequest {
  const anthropic = anthropicBody(request, model);
  const documents = new DocumentNames();
  const body: ConverseRequest = { messages: messagesOf(anthropic, documents) };
  if (anthropic.system !== undefined) body.system = systemOf(anthropic.system);
  body.inferenceConfig = {
    maxTokens: anthropic.max_tokens,
    ...(anthropic.temperature !== undefined ? { temperature: anthropic.temperature } : {}),
    ...(anthropic.top_p !== undefined ? { topP: anthropic.top_p } : {}),
    ...(anthropic.stop_sequences ? { stopSequences: anthropic.stop_sequences } : {}),
  };
  if (anthropic.tools?.length) {
    const choice = anthropic.tool_choice;
    if (choice?.type === 'none') {
      if (holdsToolBlocks(body.messages)) {
        throw new ProviderRefusal(
          BEDROCK_PROVIDER,
          'cannot honour tool_choice "none" in a conversation that holds tool calls (Converse has no "none"); use "auto".',
          { param: 'tool_choice', reason: 'unsupported_parameter' },
        );
      }
    } else {
      const toolChoice: ConverseToolChoice | undefined =
        choice?.type === 'auto' ? { auto: {} } : choice?.type === 'any' ? { any: {} } : choice?.type === 'tool' ? { tool: { name: choice.name } } : undefined;
      body.toolConfig = { tools: toolsOf(anthropic.tools), ...(toolChoice ? { toolChoice } : {}) };
    }
  }
  const additional: Record<string, unknown> = {};
  if (anthropic.thinking) additional.thinking = anthropic.thinking;
  const betas = (request.anthropic_betas?.flags ?? []).filter((flag) => BEDROCK_BETAS.has(flag));
  if (betas.length > 0) additional.anthropic_beta = [...new Set(betas)];
  if (Object.keys(additional).length > 0) body.additionalModelRequestFields = additional;
  return body;
}
