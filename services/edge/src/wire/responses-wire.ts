/**
 * OpenAI's Responses wire (POST /v1/responses): the body translated into the gateway's request by
 * parseResponsesRequest, the answer as a `response` object (with the `gateway` object as an extra
 * field) or as the Responses event stream (responses-stream.ts), and errors in OpenAI's envelope.
 * Keys, limits, routing, fallbacks and metering are the completion pipeline's, as for chat.
 */
import { finishReason } from '@gateway/openai-wire';
import type { ChatResponseOutput } from '@gateway/proto';
import type { CompletionWire } from '../completions/completion.js';
import { errorBody } from '../errors.js';
import { type ParsedResponsesRequest, parseResponsesRequest } from './parse-responses-request.js';
import { messageItem, newId, outputText, type ResponsesCompletion, responseObject, statusOf, toolCallId, toolCallItem } from './responses-output.js';
import { compactionItem } from './responses-compaction.js';
import { keepResponse, prepareResponsesRequest, storedFields } from './responses-store.js';
import { ResponsesStream } from './responses-stream.js';

type JsonObject = Record<string, unknown>;

/**
 * The output items of a whole answer: its message (text or refusal), then its tool calls; of a
 * compaction, the one `compaction` item of its summary.
 */
function outputItems(completion: ResponsesCompletion, response: ChatResponseOutput, status: string): JsonObject[] {
  const message = response.choices[0]?.message;
  if (completion.parsed.responses.compaction) return [compactionItem(message?.content ?? '')];
  const items: JsonObject[] = [];
  const content: JsonObject[] = [];
  if (message?.content) content.push(outputText(message.content));
  if (message?.refusal) content.push({ type: 'refusal', refusal: message.refusal });
  if (content.length > 0) items.push(messageItem(newId('msg'), content, status));
  const { responses } = completion.parsed;
  for (const call of message?.tool_calls ?? []) {
    const name = call.function?.name ?? '';
    const fields = { id: toolCallId(name, responses), callId: call.id ?? newId('fc'), name, arguments: call.function?.arguments ?? '', status: 'completed' };
    items.push(toolCallItem(fields, responses));
  }
  return items;
}

/** POST /v1/responses, as the completion pipeline plugs it in. */
export const responsesWire: CompletionWire<ParsedResponsesRequest> = {
  route: '/v1/responses',
  operation: 'chat',
  prepare: prepareResponsesRequest,
  newResponseId: () => newId('resp'),
  parse: parseResponsesRequest,
  renderWhole(completion: ResponsesCompletion, response: ChatResponseOutput): string {
    const { status, incomplete_details } = statusOf(finishReason(response.choices[0]?.finish_reason));
    const body = responseObject(completion, {
      id: completion.responseId ?? newId('resp'),
      createdAt: Number(response.created) || Math.floor(Date.now() / 1000),
      model: completion.answered.id ?? response.model ?? '',
      status,
      incompleteDetails: incomplete_details,
      output: outputItems(completion, response, status),
      usage: response.usage,
      final: true,
    });
    Object.assign(body, storedFields(completion));
    keepResponse(completion, body);
    void completion.reply
      .header('content-type', 'application/json')
      .header('openai-processing-ms', String(Math.round(completion.latencyMs)))
      .header('openai-model', completion.answered.id ?? '');
    return JSON.stringify(body);
  },
  openStream: (completion: ResponsesCompletion) => new ResponsesStream(completion),
  renderError: errorBody,
};
