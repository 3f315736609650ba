/**
 * OpenAI's chat-completions wire: the body parsed by parseChatRequest, the answer as a
 * `chat.completion` object or as `data: {chunk}` ... `data: [DONE]` events, each with the
 * `gateway` object (on the last chunk of a stream), and errors in OpenAI's envelope.
 */
import { picoUsdToUsd } from '@gateway/catalog';
import { chatCompletionJson, chunkJson, type GatewayInfo, type StreamIdentity, usageChunkJson } from '@gateway/openai-wire';
import type { ChatChunkOutput, ChatResponseOutput, UsageOutput } from '@gateway/proto';
import type { Completion, CompletionWire, StreamRenderer } from '../completions/completion.js';
import { errorBody, type RequestError } from '../errors.js';
import { tierName } from '../catalog-view.js';
import { parseChatRequest } from './parse-chat-request.js';
import { decisionJson } from '../guardrails/request-guard.js';

/** The `gateway` object: the model that answered, what it cost, and how it was chosen. */
export function gatewayInfo(completion: Completion): GatewayInfo {
  const { answered, attempts } = completion;
  const info: GatewayInfo = {
    routed_to: answered.id ?? '',
    ...(completion.provider ? { provider: completion.provider } : {}),
    latency_ms: Math.round(completion.latencyMs * 100) / 100,
    cost_usd: picoUsdToUsd(completion.costPico),
  };
  const route = completion.routing.route;
  if (route && route.score !== undefined) {
    info.auto = {
      score: route.score ?? null,
      policy: route.policy ?? 'balanced',
      tier: tierName(route.quality_tier) ?? (route.tier || null),
      reason: route.reason || null,
    };
  }
  if (completion.guardDecisions.length > 0) info.guardrails = completion.guardDecisions.map(decisionJson);
  const cache = completion.cache;
  if (cache)
    info.cache =
      cache.status === 'hit'
        ? { status: 'hit', age_ms: cache.ageMs ?? 0, ...(cache.similarity !== undefined && { similarity: Math.round(cache.similarity * 10_000) / 10_000 }) }
        : { status: cache.status };
  if (attempts.length > 0) info.tried = attempts.map((attempt) => ({ model: attempt.model_id ?? '', reason: attempt.reason ?? '' }));
  return info;
}

/** A chunk's JSON with the `gateway` object added as its last member. */
function withGateway(chunkJsonText: string, gateway: GatewayInfo): string {
  return `${chunkJsonText.slice(0, -1)},"gateway":${JSON.stringify(gateway)}}`;
}

/** One streamed chat completion: its identity (id, created, model) is the one every chunk carries. */
class ChatCompletionStream implements StreamRenderer, StreamIdentity {
  id = '';
  created = 0;
  model: string;
  includeUsage: boolean;
  legacyFunctions?: boolean;

  constructor(private readonly completion: Completion) {
    this.model = completion.routing.model.id ?? '';
    this.includeUsage = completion.parsed.includeUsage;
    this.legacyFunctions = completion.parsed.legacyFunctions;
  }

  named(id: string, created: number): void {
    this.id = id;
    this.created = created;
  }

  begin(first: ChatChunkOutput | undefined, head: Record<string, string>): void {
    // Set from the executor's start event when it sent them.
    this.id ||= first?.id || `chatcmpl-${this.completion.requestId}`;
    this.created ||= Number(first?.created) || Math.floor(Date.now() / 1000);
    this.model = this.completion.answered.id ?? this.model;
    head['openai-model'] = this.model;
    head['openai-processing-ms'] = String(Math.round(this.completion.reply.elapsedTime));
  }

  event(json: string): string {
    return `data: ${json}\n\n`;
  }

  chunkJson(chunk: ChatChunkOutput): string {
    return JSON.stringify(chunkJson(chunk, this));
  }

  end(held: string | undefined, usage: UsageOutput | undefined): string {
    const gateway = gatewayInfo(this.completion);
    let tail = '';
    if (held !== undefined) tail += `data: ${this.includeUsage ? held : withGateway(held, gateway)}\n\n`;
    if (this.includeUsage) tail += `data: ${JSON.stringify(usageChunkJson(usage, this, gateway))}\n\n`;
    else if (!held) tail += `data: ${JSON.stringify({ ...chunkJson({ choices: [] } as unknown as ChatChunkOutput, this), gateway })}\n\n`;
    return `${tail}data: [DONE]\n\n`;
  }

  failure(error: RequestError): string {
    return `data: ${errorBody(error)}\n\n`;
  }
}

/** POST /v1/chat/completions, as the completion pipeline plugs it in. */
export const chatCompletionsWire: CompletionWire = {
  route: '/v1/chat/completions',
  operation: 'chat',
  parse: parseChatRequest,
  renderWhole(completion: Completion, response: ChatResponseOutput): string {
    const gateway = gatewayInfo(completion);
    const body = JSON.stringify(chatCompletionJson(response, gateway, completion.parsed.legacyFunctions));
    void completion.reply
      .header('content-type', 'application/json')
      .header('openai-processing-ms', String(Math.round(gateway.latency_ms)))
      .header('openai-model', completion.answered.id ?? '');
    return body;
  },
  openStream: (completion: Completion) => new ChatCompletionStream(completion),
  renderError: errorBody,
};
