/**
 * The Responses API's output shapes (the `Response` object, its `message` and `function_call`
 * items, its usage), as OpenAI's published types (openai's resources/responses/responses.d.ts)
 * declare them; shared by the whole answer (responses-wire.ts) and the stream (responses-stream.ts).
 */
import { randomUUID } from 'node:crypto';
import { usageCounts } from '@gateway/openai-wire';
import type { UsageOutput } from '@gateway/proto';
import type { Completion } from '../completions/completion.js';
import { gatewayInfo } from './chat-completions-wire.js';
import type { ParsedResponsesRequest, ResponsesContext } from './parse-responses-request.js';

type JsonObject = Record<string, unknown>;

/** A Responses completion: one whose request came in on the Responses wire. */
export type ResponsesCompletion = Completion<ParsedResponsesRequest>;

/** A new id of a response (`resp_`), message item (`msg_`), function call item (`fc_`) or custom tool call item (`ctc_`). */
export function newId(prefix: 'resp' | 'msg' | 'fc' | 'ctc'): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}

/** A Response's `status` and `incomplete_details`, from the chat finish reason that ended it. */
export function statusOf(finish: string | null): { status: 'completed' | 'incomplete'; incomplete_details: { reason: string } | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

/**
 * The Responses usage object. `input_tokens_details.cache_write_tokens` is there only when the
 * provider wrote some input tokens to its cache (usageCounts), as in chat completions' usage: the
 * cost prices them apart, and without them a caller could not tell from the usage what the cost is
 * made of.
 */
export function responseUsage(usage: UsageOutput | undefined | null) {
  const counts = usageCounts(usage);
  return {
    input_tokens: counts.prompt,
    input_tokens_details: { cached_tokens: counts.cached, ...counts.cacheWriteDetail },
    output_tokens: counts.completion,
    output_tokens_details: { reasoning_tokens: counts.reasoning },
    total_tokens: counts.total,
  };
}

/** An `output_text` content part. */
export function outputText(text: string) {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

/** An assistant `message` item. */
export function messageItem(id: string, content: readonly JsonObject[], status: string): JsonObject {
  return { id, type: 'message', status, role: 'assistant', content };
}

/** One tool call the model made, as the chat answer names it. */
export interface ToolCallFields {
  id: string;
  callId: string;
  name: string;
  arguments: string;
  status: string;
}

/** The raw input of a custom tool's call: the `input` of its arguments (the arguments as they are if they hold none). */
export function customInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    const input = typeof parsed === 'object' && parsed !== null ? (parsed as { input?: unknown }).input : undefined;
    return typeof input === 'string' ? input : args;
  } catch {
    return args;
  }
}

/** A new id of a tool call's output item: `ctc_` for a custom tool's, else `fc_`. */
export function toolCallId(name: string, context: ResponsesContext): string {
  return newId(context.custom.has(name) ? 'ctc' : 'fc');
}

/**
 * The output item of a tool call: a `function_call`, or a `custom_tool_call` with its raw `input`
 * for a custom tool; a flattened namespace tool is named back by its namespace and name.
 */
export function toolCallItem(call: ToolCallFields, context: ResponsesContext): JsonObject {
  const original = context.namespaced.get(call.name);
  const named = { call_id: call.callId, name: original?.name ?? call.name, ...(original ? { namespace: original.namespace } : {}) };
  if (context.custom.has(call.name)) return { id: call.id, type: 'custom_tool_call', status: call.status, input: customInput(call.arguments), ...named };
  return { id: call.id, type: 'function_call', status: call.status, arguments: call.arguments, ...named };
}

/** What one Response object says beyond what its request repeats. */
export interface ResponseState {
  id: string;
  createdAt: number;
  model: string;
  status: 'in_progress' | 'completed' | 'incomplete' | 'failed';
  incompleteDetails?: { reason: string } | null;
  output: readonly JsonObject[];
  usage?: UsageOutput | undefined;
  error?: { code: string; message: string } | null;
  /** The answer is final: usage and the `gateway` object are added. */
  final: boolean;
}

/** A Response object: its state, the request's repeated fields, and (final) its usage and the `gateway` object. */
export function responseObject(completion: ResponsesCompletion, state: ResponseState): JsonObject {
  return {
    id: state.id,
    object: 'response',
    created_at: state.createdAt,
    status: state.status,
    background: false,
    error: state.error ?? null,
    incomplete_details: state.incompleteDetails ?? null,
    model: state.model,
    output: state.output,
    ...completion.parsed.responses.echo,
    service_tier: 'default',
    usage: state.final && state.status !== 'failed' ? responseUsage(state.usage) : null,
    ...(state.final ? { gateway: gatewayInfo(completion) } : {}),
  };
}
