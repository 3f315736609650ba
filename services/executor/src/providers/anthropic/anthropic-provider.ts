/**
 * The adapter for Anthropic's Messages API: POST {base_url}/v1/messages with `x-api-key` (from the
 * variable the catalog names) and `anthropic-version: 2023-06-01`, whole or streamed, translated
 * to and from the gateway's OpenAI-shaped messages (convert-request.ts, map-response.ts).
 *
 * The caller's Anthropic beta flags go as `anthropic-beta`, with the catalog model's own.
 *
 * Every request goes through the origin's keep-alive Pool with the connect, first-byte and idle
 * timeouts, and carries the call's AbortSignal: a caller that goes away closes the upstream
 * connection at once. Streams are read only as fast as the caller pulls. A stream that ends
 * without `message_stop` is `truncated`, an event that is not JSON `malformed`, an `error` event a
 * `stream_error` (retryable for overloaded_error and api_error).
 */
import type { EventSourceMessage } from 'eventsource-parser';
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput, ChatResponse } from '@gateway/proto';
import { HttpProvider, type UpstreamRequest } from '../http-provider.js';
import type { ProviderContext, ProviderStreamEvent } from '../provider.js';
import { parseStreamJson, readServerSentEvents } from '../server-sent-events.js';
import { UpstreamError } from '../upstream-error.js';
import { upstreamUrl, type ErrorResponse } from '../upstream-http.js';
import { toAnthropicRequest } from './convert-request.js';
import { AnthropicStreamTranslator, fromAnthropicResponse } from './map-response.js';
import { upstreamErrorFromResponse } from './parse-upstream-error.js';
import type { AnthropicResponse, AnthropicStreamEvent } from './wire-types.js';
import { ANTHROPIC_PROVIDER } from '../provider-names.js';

/** The Messages API version this adapter speaks. */
export const ANTHROPIC_VERSION = '2023-06-01';

/** Used when a catalog model names no base_url. */
const DEFAULT_BASE_URL = 'https://api.anthropic.com';

/** The anthropic adapter. */
export class AnthropicProvider extends HttpProvider {
  readonly name: string = ANTHROPIC_PROVIDER;

  /** A whole Message, translated to a ChatResponse. */
  async complete(request: ChatRequestOutput, context: ProviderContext): Promise<ChatResponse> {
    const response = await this.send(request, context, false);
    const body = await this.readWhole(response, context.signal, hasContent, 'upstream sent a message without content');
    return fromAnthropicResponse(body, context.model.id);
  }

  /** A streamed Message: OpenAI-shaped chunks as the events arrive, then the usage. */
  async *stream(request: ChatRequestOutput, context: ProviderContext): AsyncGenerator<ProviderStreamEvent> {
    const response = await this.send(request, context, true);
    const translator = new AnthropicStreamTranslator(this.name, context.model.id, this.secretsOf(context));
    const events = readServerSentEvents(response.body, {
      provider: this.name,
      signal: context.signal,
      isLast: isMessageStop,
    });
    // Not left early after message_stop: the reader then waits for the end of the response, which
    // gives the connection back to the pool.
    for await (const event of events) {
      for (const chunk of translator.accept(parseEvent(event.data, this.name))) yield { type: 'chunk', chunk };
    }
    if (!translator.finished) {
      throw new UpstreamError('upstream stream ended without message_stop', { provider: this.name, kind: 'truncated', status: response.statusCode });
    }
    yield { type: 'usage', usage: translator.totalUsage() };
  }

  protected authorize(headers: Record<string, string>, key: string | undefined, _context?: ProviderContext): void | Promise<void> {
    headers['anthropic-version'] = ANTHROPIC_VERSION;
    if (key) headers['x-api-key'] = key;
  }

  protected errorOf(response: ErrorResponse, secrets: readonly string[]): UpstreamError {
    return upstreamErrorFromResponse(this.name, response, secrets);
  }

  protected requestFor(request: ChatRequestOutput, model: CatalogModel, stream: boolean): UpstreamRequest {
    const body = JSON.stringify(toAnthropicRequest(request, model, stream));
    const url = upstreamUrl(model.upstream.base_url ?? DEFAULT_BASE_URL, 'v1', 'messages');
    const betas = betaHeader(model, request.anthropic_betas?.flags ?? []);
    return betas === undefined ? { url, body } : { url, body, headers: betas };
  }
}

/**
 * The `anthropic-beta` header of a request that carries beta flags: the catalog model's own flags,
 * then the caller's, each once, comma-joined, under the catalog's spelling of the header name (so
 * it replaces that header); undefined when the caller sent none (the catalog's header then goes as
 * it is).
 */
export function betaHeader(model: CatalogModel, requested: readonly string[]): Record<string, string> | undefined {
  if (requested.length === 0) return undefined;
  const [name, configured] = Object.entries(model.upstream.headers ?? {}).find(([header]) => header.toLowerCase() === 'anthropic-beta') ?? [
    'anthropic-beta',
    '',
  ];
  const flags = [...configured.split(','), ...requested].map((flag) => flag.trim()).filter((flag) => flag !== '');
  return { [name]: [...new Set(flags)].join(',') };
}

/** Whether a whole answer is a Message: it has content. */
function hasContent(body: AnthropicResponse): boolean {
  return Array.isArray(body.content);
}

/** message_stop, by its event name or, from a server that sends no names, by its type. */
function isMessageStop(event: EventSourceMessage): boolean {
  if (event.event !== undefined) return event.event === 'message_stop';
  return /^\s*\{\s*"type"\s*:\s*"message_stop"/.test(event.data);
}

function parseEvent(data: string, provider: string): AnthropicStreamEvent {
  const parsed = parseStreamJson(data, provider, 'event');
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { type?: unknown }).type !== 'string') {
    throw new UpstreamError('upstream sent a stream event without a type', { provider, kind: 'malformed' });
  }
  return parsed as AnthropicStreamEvent;
}
