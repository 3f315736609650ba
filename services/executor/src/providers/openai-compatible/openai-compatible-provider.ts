/**
 * The adapter for every upstream that speaks OpenAI's chat-completions protocol (OpenAI, Groq,
 * Together, Mistral, DeepSeek, vLLM, Ollama), configured by catalog data alone: base_url,
 * api_key_env (the variable holding the key), extra headers and the upstream model name.
 *
 * Every request goes through the origin's keep-alive Pool with the connect, first-byte and idle
 * timeouts, and carries the call's AbortSignal: a caller that goes away closes the upstream
 * connection at once. Streams are read only as fast as the caller pulls (backpressure reaches the
 * upstream's TCP window) and always ask for the usage chunk, which becomes the StreamEnd's usage.
 */
import type { Dispatcher } from 'undici';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { ChatRequestOutput, ChatResponse, Usage } from '@gateway/proto';
import { countPromptTokens, countTextTokens } from '@gateway/tokens';
import type { Provider, ProviderContext, ProviderStreamEvent } from '../provider.js';
import { UpstreamError } from '../upstream-error.js';
import { toOpenAiRequest } from './convert-request.js';
import { fromOpenAiChunk, fromOpenAiResponse, usageOfChunk } from './map-response.js';
import { MAX_ERROR_BODY_CHARS, upstreamErrorFromResponse, upstreamErrorFromTransport } from './parse-upstream-error.js';
import type { UpstreamPools } from './upstream-pools.js';
import type { OpenAiChatChunk, OpenAiChatResponse } from './wire-types.js';

/** The provider name reported to callers. */
export const OPENAI_COMPATIBLE_PROVIDER = 'openai-compatible';

/** After `[DONE]`, how long the upstream has to end the response before the connection is dropped. */
const END_AFTER_DONE_MS = 1000;

/** What the adapter needs from its process. */
export interface OpenAiCompatibleDependencies {
  readonly pools: UpstreamPools;
  /** The environment the keys are read from, by the variable name the catalog gives. */
  readonly environment: Readonly<Record<string, string | undefined>>;
}

/** The openai-compatible adapter. */
export class OpenAiCompatibleProvider implements Provider {
  readonly name = OPENAI_COMPATIBLE_PROVIDER;

  constructor(private readonly dependencies: OpenAiCompatibleDependencies) {}

  /** POST /chat/completions without streaming, translated back to a ChatResponse. */
  async complete(request: ChatRequestOutput, context: ProviderContext): Promise<ChatResponse> {
    const response = await this.send(request, context, false);
    let text: string;
    try {
      text = await response.body.text();
    } catch (error) {
      context.signal.throwIfAborted();
      throw upstreamErrorFromTransport(this.name, error, 'body');
    }
    let body: OpenAiChatResponse;
    try {
      body = JSON.parse(text) as OpenAiChatResponse;
    } catch (error) {
      throw new UpstreamError('upstream sent a body that is not JSON', { provider: this.name, kind: 'malformed', status: response.statusCode, cause: error });
    }
    if (typeof body !== 'object' || body === null || !Array.isArray(body.choices) || body.choices.length === 0) {
      throw new UpstreamError('upstream sent a response without choices', { provider: this.name, kind: 'malformed', status: response.statusCode });
    }
    const converted = fromOpenAiResponse(body, context.model.id);
    if (!converted.usage) {
      // A server that reports no usage (some vLLM and Ollama versions): count it ourselves.
      const completionText = converted.choices?.map((choice) => `${choice.message?.content ?? ''}${(choice.message?.tool_calls ?? []).map((call) => call.function?.arguments ?? '').join('')}`).join('') ?? '';
      converted.usage = estimateUsage(request, completionText);
    }
    return converted;
  }

  /** POST /chat/completions with `stream: true`, one ChatChunk per SSE event as it arrives. */
  async *stream(request: ChatRequestOutput, context: ProviderContext): AsyncGenerator<ProviderStreamEvent> {
    const response = await this.send(request, context, true);
    const body = response.body;
    const events: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (event) => events.push(event) });
    const decoder = new TextDecoder();
    const unfinished = new Set<number>();
    let sawFinish = false;
    let done = false;
    let ended = false;
    let usage: Usage | undefined;
    let completionText = '';
    let dropTimer: NodeJS.Timeout | undefined;
    try {
      try {
        for await (const bytes of body as AsyncIterable<Buffer>) {
          if (done) continue;
          parser.feed(decoder.decode(bytes, { stream: true }));
          while (events.length > 0 && !done) {
            const event = events.shift() as EventSourceMessage;
            if (event.data.trim() === '[DONE]') {
              done = true;
              // Wait for the end of the response so the connection goes back to the pool; an
              // upstream that keeps it open after [DONE] loses it instead of stalling the caller.
              dropTimer = setTimeout(() => body.destroy(), END_AFTER_DONE_MS);
              break;
            }
            const parsed = parseChunk(event.data, this.name);
            const chunkUsage = usageOfChunk(parsed);
            if (chunkUsage) usage = chunkUsage;
            if (!parsed.choices?.length) continue;
            const chunk = fromOpenAiChunk(parsed, context.model.id);
            for (const choice of chunk.choices ?? []) {
              const index = choice.index ?? 0;
              if (choice.finish_reason && choice.finish_reason !== 'FINISH_REASON_UNSPECIFIED') { unfinished.delete(index); sawFinish = true; }
              else unfinished.add(index);
              completionText += choice.delta?.content ?? '';
              for (const call of choice.delta?.tool_calls ?? []) completionText += call.function?.arguments ?? '';
            }
            yield { type: 'chunk', chunk };
          }
        }
        ended = true;
      } catch (error) {
        if (error instanceof UpstreamError) throw error;
        context.signal.throwIfAborted();
        // A connection dropped after [DONE] (or dropped by us) lost nothing.
        if (!done) throw upstreamErrorFromTransport(this.name, error, 'body');
        ended = true;
      }
    } finally {
      if (dropTimer) clearTimeout(dropTimer);
      // Left early (the caller stopped pulling, or a failure): release the connection now.
      if (!ended) body.destroy();
    }
    if (!done && !(sawFinish && unfinished.size === 0)) {
      throw new UpstreamError('upstream stream ended without [DONE] or a finish reason', { provider: this.name, kind: 'truncated', status: response.statusCode });
    }
    yield { type: 'usage', usage: usage ?? estimateUsage(request, completionText) };
  }

  /** Sends the request; resolves with a 2xx response, rejects with an UpstreamError otherwise. */
  private async send(request: ChatRequestOutput, context: ProviderContext, stream: boolean): Promise<Dispatcher.ResponseData> {
    const { model } = context;
    if (!model.upstream.base_url) {
      throw new GatewayError(GrpcStatus.FAILED_PRECONDITION, 'model_unavailable', `Model ${model.id} has no upstream base_url in the catalog.`);
    }
    const base = new URL(model.upstream.base_url);
    const path = `${base.pathname.replace(/\/+$/, '')}/chat/completions${base.search}`;
    const key = model.upstream.api_key_env ? this.dependencies.environment[model.upstream.api_key_env] : undefined;
    const headers: Record<string, string> = {
      ...(model.upstream.headers ?? {}),
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
      'user-agent': 'llm-gateway-executor/0.1',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    };
    const body = JSON.stringify(toOpenAiRequest(request, model, stream));
    let response: Dispatcher.ResponseData;
    try {
      response = await this.dependencies.pools.poolFor(base.origin).request({ method: 'POST', path, headers, body, signal: context.signal });
    } catch (error) {
      context.signal.throwIfAborted();
      throw upstreamErrorFromTransport(this.name, error, 'request');
    }
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    const text = await readLimited(response.body, MAX_ERROR_BODY_CHARS).catch(() => '');
    throw upstreamErrorFromResponse(this.name, response.statusCode, response.headers, text, key ? [key] : []);
  }
}

function parseChunk(data: string, provider: string): OpenAiChatChunk {
  let parsed: OpenAiChatChunk;
  try {
    parsed = JSON.parse(data) as OpenAiChatChunk;
  } catch (error) {
    throw new UpstreamError('upstream sent a stream event that is not JSON', { provider, kind: 'malformed', cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null) throw new UpstreamError('upstream sent a stream event that is not an object', { provider, kind: 'malformed' });
  if (parsed.error) {
    const status = typeof parsed.error.code === 'number' ? parsed.error.code : undefined;
    throw new UpstreamError(`upstream sent an error inside the stream: ${parsed.error.message ?? 'no message'}`, { provider, kind: 'stream_error', status: status !== undefined && status >= 400 && status <= 599 ? status : undefined, retryable: true });
  }
  return parsed;
}

/** Reads at most `limit` characters of a body, then drops the rest. */
async function readLimited(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  let text = '';
  for await (const bytes of body as AsyncIterable<Buffer>) {
    text += bytes.toString('utf8');
    if (text.length >= limit) { body.destroy(); break; }
  }
  return text.slice(0, limit);
}

/** Usage counted by the gateway's tokenizer when the upstream reports none. */
function estimateUsage(request: ChatRequestOutput, completionText: string): Usage {
  const prompt = countPromptTokens(request);
  const completion = countTextTokens(completionText);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, cached_tokens: 0, reasoning_tokens: 0 };
}
