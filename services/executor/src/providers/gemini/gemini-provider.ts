/**
 * The adapter for Google's Gemini API: POST {base_url}/v1beta/models/{model}:generateContent, or
 * :streamGenerateContent?alt=sse for streams, with the key in the `x-goog-api-key` header (never
 * in the URL, which proxies and logs keep), translated to and from the gateway's OpenAI-shaped
 * messages (convert-request.ts, map-response.ts).
 *
 * Every request goes through the origin's keep-alive Pool with the connect, first-byte and idle
 * timeouts, and carries the call's AbortSignal: a caller that goes away closes the upstream
 * connection at once. Streams are read only as fast as the caller pulls. Gemini's stream has no
 * terminal event: one that ends before every candidate has a finishReason is `truncated`.
 */
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput, ChatResponse } from '@gateway/proto';
import { HttpProvider, type UpstreamRequest } from '../http-provider.js';
import type { EmbeddingProvider, ProviderContext, ProviderStreamEvent } from '../provider.js';
import { parseStreamJson, readServerSentEvents } from '../server-sent-events.js';
import { UpstreamError } from '../upstream-error.js';
import { upstreamUrl, type ErrorResponse } from '../upstream-http.js';
import { toGeminiRequest } from './convert-request.js';
import { GeminiEmbeddings } from './embeddings.js';
import { fromGeminiResponse, GeminiStreamTranslator } from './map-response.js';
import { streamErrorOf, upstreamErrorFromResponse } from './parse-upstream-error.js';
import type { GeminiResponse } from './wire-types.js';
import { GEMINI_PROVIDER } from '../provider-names.js';

/** Used when a catalog model names no base_url. */
const DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com';

/** The gemini adapter. */
export class GeminiProvider extends HttpProvider {
  readonly name: string = GEMINI_PROVIDER;
  readonly embeddings: EmbeddingProvider = new GeminiEmbeddings(this);

  /** generateContent, translated to a ChatResponse. */
  async complete(request: ChatRequestOutput, context: ProviderContext): Promise<ChatResponse> {
    const response = await this.send(request, context, false);
    const body = await this.readWhole(response, context.signal, isNotArray, 'upstream sent a body that is not a GenerateContentResponse');
    if (body.error) throw streamErrorOf(this.name, body.error, this.secretsOf(context));
    if (!Array.isArray(body.candidates) && !body.promptFeedback?.blockReason) {
      throw new UpstreamError('upstream sent a response without candidates', { provider: this.name, kind: 'malformed', status: response.statusCode });
    }
    return fromGeminiResponse(body, context.model.id);
  }

  /** streamGenerateContent?alt=sse: OpenAI-shaped chunks as the upstream chunks arrive, then the usage. */
  async *stream(request: ChatRequestOutput, context: ProviderContext): AsyncGenerator<ProviderStreamEvent> {
    const response = await this.send(request, context, true);
    const translator = new GeminiStreamTranslator(context.model.id);
    for await (const event of readServerSentEvents(response.body, { provider: this.name, signal: context.signal })) {
      if (event.data.trim() === '') continue;
      const body = parseChunk(event.data, this.name);
      if (body.error) throw streamErrorOf(this.name, body.error, this.secretsOf(context));
      for (const chunk of translator.accept(body)) yield { type: 'chunk', chunk };
    }
    if (!translator.complete) {
      throw new UpstreamError('upstream stream ended before a finishReason', { provider: this.name, kind: 'truncated', status: response.statusCode });
    }
    yield { type: 'usage', usage: translator.totalUsage() };
  }

  protected authorize(headers: Record<string, string>, key: string | undefined, _context?: ProviderContext): void | Promise<void> {
    if (key) headers['x-goog-api-key'] = key;
  }

  protected errorOf(response: ErrorResponse, secrets: readonly string[]): UpstreamError {
    return upstreamErrorFromResponse(this.name, response, secrets);
  }

  protected requestFor(request: ChatRequestOutput, model: CatalogModel, stream: boolean): UpstreamRequest {
    const body = JSON.stringify(toGeminiRequest(request, model));
    const name = model.upstream.model.replace(/^models\//, '');
    const url = upstreamUrl(model.upstream.base_url ?? DEFAULT_BASE_URL, 'v1beta', `models/${name}:${stream ? 'streamGenerateContent' : 'generateContent'}`);
    if (stream) url.searchParams.set('alt', 'sse');
    return { url, body };
  }
}

/** Whether a whole answer is a GenerateContentResponse object rather than a list. */
function isNotArray(body: GeminiResponse): boolean {
  return !Array.isArray(body);
}

function parseChunk(data: string, provider: string): GeminiResponse {
  const parsed = parseStreamJson(data, provider, 'chunk');
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UpstreamError('upstream sent a stream chunk that is not an object', { provider, kind: 'malformed' });
  }
  return parsed as GeminiResponse;
}
