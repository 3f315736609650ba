/**
 * Anthropic's Messages wire (POST /v1/messages): the body translated into the gateway's request by
 * parseMessagesRequest (the `anthropic-beta` header's flags with it), the answer as a `message` object (with the `gateway` object as an extra
 * field) or as the Messages event stream (messages-stream.ts), and errors in Anthropic's envelope
 * `{"type":"error","error":{"type","message"}}`. The key is read from `x-api-key` (Anthropic's
 * SDK) or a bearer token (ANTHROPIC_AUTH_TOKEN). Keys, limits, routing, fallbacks and metering are
 * the completion pipeline's, as for chat.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { finishReason } from '@gateway/openai-wire';
import type { ChatResponseOutput } from '@gateway/proto';
import type { Completion, CompletionWire } from '../completions/completion.js';
import { gatewayInfo } from './chat-completions-wire.js';
import { messagesErrors, messageUsage, newMessageId, stopReason, thinkingBlock, toolInput } from './messages-output.js';
import { MessagesStream } from './messages-stream.js';
import { parseMessagesRequest } from './parse-messages-request.js';

type JsonObject = Record<string, unknown>;

/** The content blocks of a whole answer: its thinking blocks (signed, whole), its text, then its tool uses. */
function contentBlocks(response: ChatResponseOutput): JsonObject[] {
  const message = response.choices[0]?.message;
  const blocks: JsonObject[] = (message?.thinking?.blocks ?? []).map(thinkingBlock);
  const text = (message?.content ?? '') + (message?.refusal ?? '');
  if (text) blocks.push({ type: 'text', text });
  for (const call of message?.tool_calls ?? []) {
    blocks.push({ type: 'tool_use', id: call.id || newMessageId('toolu'), name: call.function?.name ?? '', input: toolInput(call.function?.arguments ?? '') });
  }
  return blocks;
}

/** POST /v1/messages, as the completion pipeline plugs it in. */
export const messagesWire: CompletionWire = {
  ...messagesErrors,
  route: '/v1/messages',
  operation: 'chat',
  maxTokensCeiling: true,
  newResponseId: () => newMessageId(),
  parse: (body: unknown, headers: IncomingHttpHeaders) => parseMessagesRequest(body, { headers }),
  renderWhole(completion: Completion, response: ChatResponseOutput): string {
    const model = completion.answered.id ?? response.model ?? '';
    const body = {
      id: completion.responseId ?? newMessageId(),
      type: 'message',
      role: 'assistant',
      model,
      content: contentBlocks(response),
      stop_reason: stopReason(finishReason(response.choices[0]?.finish_reason)),
      stop_sequence: null,
      usage: messageUsage(response.usage),
      gateway: gatewayInfo(completion),
    };
    void completion.reply.header('content-type', 'application/json').header('request-id', completion.requestId);
    return JSON.stringify(body);
  },
  openStream: (completion: Completion) => new MessagesStream(completion),
};
