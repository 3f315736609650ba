/**
 * The shape every HTTP adapter (openai-compatible, anthropic, gemini) shares: built from the
 * process's pools and environment, it posts a JSON body with the catalog's extra headers, our own
 * and the provider's key header, and reads a non-2xx answer through the provider's error
 * envelope, with our key kept out of every message.
 */
import type { Dispatcher } from 'undici';
import type { ChatRequestOutput, ChatResponse } from '@gateway/proto';
import type { Provider, ProviderContext, ProviderStreamEvent } from './provider.js';
import type { UpstreamError } from './upstream-error.js';
import { providerKey, providerSecrets, postToUpstream, type ErrorResponse, type HttpProviderDependencies } from './upstream-http.js';

/** Sent as `user-agent` on every upstream request. */
const USER_AGENT = 'llm-gateway-executor/0.1';

/** One request to send. */
export interface UpstreamRequest {
  readonly url: URL;
  /** The request body, as JSON. */
  readonly body: string;
  /** Whether the answer is a stream (`accept: text/event-stream`). */
  readonly stream: boolean;
}

/** An HTTP adapter. */
export abstract class HttpProvider implements Provider {
  abstract readonly name: string;

  constructor(protected readonly dependencies: HttpProviderDependencies) {}

  abstract complete(request: ChatRequestOutput, context: ProviderContext): Promise<ChatResponse>;

  abstract stream(request: ChatRequestOutput, context: ProviderContext): AsyncIterable<ProviderStreamEvent>;

  /** Adds the provider's key header (and any header of its API version) to the request's headers. */
  protected abstract authorize(headers: Record<string, string>, key: string | undefined): void;

  /** The UpstreamError of a non-2xx answer, read from the provider's error envelope. */
  protected abstract errorOf(response: ErrorResponse, secrets: readonly string[]): UpstreamError;

  /** What an error text must never show: the model's key. */
  protected secretsOf(context: ProviderContext): string[] {
    return providerSecrets(this.dependencies.environment, context.model);
  }

  /** Sends the request; resolves with a 2xx response, rejects with an UpstreamError otherwise. */
  protected post(context: ProviderContext, request: UpstreamRequest): Promise<Dispatcher.ResponseData> {
    const { model } = context;
    const headers: Record<string, string> = {
      ...(model.upstream.headers ?? {}),
      'content-type': 'application/json',
      accept: request.stream ? 'text/event-stream' : 'application/json',
      'user-agent': USER_AGENT,
    };
    this.authorize(headers, providerKey(this.dependencies.environment, model));
    return postToUpstream({
      traceparent: context.traceparent,
      provider: this.name,
      pools: this.dependencies.pools,
      url: request.url,
      headers,
      body: request.body,
      signal: context.signal,
      parseError: (response) => this.errorOf(response, this.secretsOf(context)),
    });
  }
}
