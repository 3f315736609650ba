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
import type { EventSourceMessage } from 'eventsource-parser';
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput, ChatResponse, Usage } from '@gateway/proto';
import { countPromptTokensAsync, countTextTokensAsync } from '@gateway/tokens';
import { HttpProvider, type UpstreamRequest } from '../http-provider.js';
import type { ProviderContext, ProviderStreamEvent } from '../provider.js';
import { parseStreamJson, readServerSentEvents } from '../server-sent-events.js';
import { UpstreamError } from '../upstream-error.js';
import { type ErrorResponse, type HttpProviderDependencies, missingBaseUrl } from '../upstream-http.js';
import { toOpenAiRequest } from './convert-request.js';
import { OpenAiCompatibleEmbeddings } from './embeddings.js';
import { fromOpenAiChunk, fromOpenAiResponse, usageOfChunk } from './map-response.js';
import { upstreamErrorFromResponse } from './parse-upstream-error.js';
import type { OpenAiChatChunk, OpenAiChatResponse } from './wire-types.js';
import { OPENAI_COMPATIBLE_PROVIDER } from '../provider-names.js';

/** What the adapter needs from its process (the same as every HTTP adapter). */
export type OpenAiCompatibleDependencies = HttpProviderDependencies;

/** The openai-compatible adapter. */
export class OpenAiCompatibleProvider extends HttpProvider {
  readonly name: string = OPENAI_COMPATIBLE_PROVIDER;
  readonly embeddings = new OpenAiCompatibleEmbeddings(this);

  /** POST /chat/completions without streaming, translated back to a ChatResponse. */
  async complete(request: ChatRequestOutput, context: ProviderContext): Promise<ChatResponse> {
    const response = await this.send(request, context, false);
    const body = await this.readWhole(response, context.signal, hasChoices, 'upstream sent a response without choices');
    const converted = fromOpenAiResponse(body, context.model.id);
    if (!converted.usage) {
      // A server that reports no usage (some vLLM and Ollama versions): count it ourselves.
      const completionText =
        converted.choices
          ?.map((choice) => `${choice.message?.content ?? ''}${(choice.message?.tool_calls ?? []).map((call) => call.function?.arguments ?? '').join('')}`)
          .join('') ?? '';
      converted.usage = await estimateUsage(request, completionText);
    }
    return converted;
  }

  /** POST /chat/completions with `stream: true`, one ChatChunk per SSE event as it arrives. */
  async *stream(request: ChatRequestOutput, context: ProviderContext): AsyncGenerator<ProviderStreamEvent> {
    const response = await this.send(request, context, true);
    const unfinished = new Set<number>();
    let sawFinish = false;
    let done = false;
    let usage: Usage | undefined;
    let completionText = '';
    // After [DONE] the reader yields nothing more and waits for the end of the response, so the
    // connection goes back to the pool (an upstream that keeps it open after [DONE] loses it).
    const events = readServerSentEvents(response.body, { provider: this.name, signal: context.signal, isLast: isDone });
    for await (const event of events) {
      if (isDone(event)) {
        // The answer is whole: its usage goes out now, while the reader waits for the response's end.
        done = true;
        yield { type: 'usage', usage: usage ?? (await estimateUsage(request, completionText)) };
        continue;
      }
      const parsed = parseChunk(event.data, this.name);
      const chunkUsage = usageOfChunk(parsed);
      if (chunkUsage) usage = chunkUsage;
      if (!parsed.choices?.length) continue;
      const chunk = fromOpenAiChunk(parsed, context.model.id);
      for (const choice of chunk.choices ?? []) {
        const index = choice.index ?? 0;
        if (choice.finish_reason && choice.finish_reason !== 'FINISH_REASON_UNSPECIFIED') {
          unfinished.delete(index);
          sawFinish = true;
        } else unfinished.add(index);
        completionText += choice.delta?.content ?? '';
        for (const call of choice.delta?.tool_calls ?? []) completionText += call.function?.arguments ?? '';
      }
      yield { type: 'chunk', chunk };
    }
    if (done) return;
    if (!(sawFinish && unfinished.size === 0)) {
      throw new UpstreamError('upstream stream ended without [DONE] or a finish reason', {
        provider: this.name,
        kind: 'truncated',
        status: response.statusCode,
      });
    }
    yield { type: 'usage', usage: usage ?? (await estimateUsage(request, completionText)) };
  }

  protected authorize(headers: Record<string, string>, key: string | undefined, _context?: ProviderContext): void | Promise<void> {
    if (key) headers.authorization = `Bearer ${key}`;
  }

  protected errorOf(response: ErrorResponse, secrets: readonly string[]): UpstreamError {
    return upstreamErrorFromResponse(this.name, response, secrets);
  }

  protected requestFor(request: ChatRequestOutput, model: CatalogModel, stream: boolean): UpstreamRequest {
    if (!model.upstream.base_url) throw missingBaseUrl(model);
    const base = new URL(model.upstream.base_url);
    const url = new URL(`${base.pathname.replace(/\/+$/, '')}/chat/completions${base.search}`, base.origin);
    return { url, body: JSON.stringify(toOpenAiRequest(request, model, stream)) };
  }
}

/** Whether a whole answer has choices. */
function hasChoices(body: OpenAiChatResponse): boolean {
  return Array.isArray(body.choices) && body.choices.length > 0;
}

/** The `[DONE]` sentinel that ends an OpenAI stream. */
function isDone(event: EventSourceMessage): boolean {
  return event.data.trim() === '[DONE]';
}

function parseChunk(data: string, provider: string): OpenAiChatChunk {
  const parsed = parseStreamJson(data, provider, 'event') as OpenAiChatChunk;
  if (typeof parsed !== 'object' || parsed === null)
    throw new UpstreamError('upstream sent a stream event that is not an object', { provider, kind: 'malformed' });
  if (parsed.error) {
    const status = typeof parsed.error.code === 'number' ? parsed.error.code : undefined;
    throw new UpstreamError(`upstream sent an error inside the stream: ${parsed.error.message ?? 'no message'}`, {
      provider,
      kind: 'stream_error',
      status: status !== undefined && status >= 400 && status <= 599 ? status : undefined,
      retryable: true,
    });
  }
  return parsed;
}

/**
 * Usage counted by the gateway's tokenizer when the upstream reports none: exact, and in time
 * slices, so that a big prompt or answer does not hold the event loop.
 */
async function estimateUsage(request: ChatRequestOutput, completionText: string): Promise<Usage> {
  const prompt = await countPromptTokensAsync(request);
  const completion = await countTextTokensAsync(completionText);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, cached_tokens: 0, reasoning_tokens: 0 };
}
