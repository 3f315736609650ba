/**
 * The shape every HTTP adapter (openai-compatible, anthropic, gemini) shares: built from the
 * process's pools and environment, it posts a JSON body with the catalog's extra headers, our own
 * and the provider's key header, and reads a non-2xx answer through the provider's error
 * envelope, with our key kept out of every message.
 */
import type { Dispatcher } from 'undici';
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput, ChatResponse } from '@gateway/proto';
import type { Provider, ProviderContext, ProviderStreamEvent } from './provider.js';
import { UpstreamError } from './upstream-error.js';
import { providerKey, providerSecrets, postToUpstream, readJsonBody, type ErrorResponse, type HttpProviderDependencies } from './upstream-http.js';

/** Sent as `user-agent` on every upstream request. */
const USER_AGENT = 'llm-gateway-executor/0.1';

/** One request to send. */
export interface UpstreamRequest {
  readonly url: URL;
  /** The request body, as JSON. */
  readonly body: string;
  /** Headers of this request (over the catalog's extra headers); absent for none. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * What an adapter's embeddings need of it: its transport (HttpProvider's postForWhole), so
 * an embeddings request goes out with the adapter's auth, pools, timeouts and error envelope.
 */
export interface EmbeddingTransport {
  readonly name: string;
  postForWhole<T extends object>(request: UpstreamRequest, context: ProviderContext, isWhole: (body: T) => boolean, missing: string): Promise<T>;
}

/** An HTTP adapter. */
export abstract class HttpProvider implements Provider {
  abstract readonly name: string;

  constructor(protected readonly dependencies: HttpProviderDependencies) {}

  /** See Provider.complete. */
  abstract complete(request: ChatRequestOutput, context: ProviderContext): Promise<ChatResponse>;

  /** See Provider.stream. */
  abstract stream(request: ChatRequestOutput, context: ProviderContext): AsyncIterable<ProviderStreamEvent>;

  /** The URL and body of a chat request in the provider's wire format; throws for what cannot be translated. */
  protected abstract requestFor(request: ChatRequestOutput, model: CatalogModel, stream: boolean): UpstreamRequest;

  /**
   * Adds the provider's key header (and any header of its API version) to the request's headers;
   * a provider whose credential is fetched (a cloud's access token: Azure's Entra ID, Google's for
   * Vertex AI) does so here, within the call's signal, and rejects with an UpstreamError when it
   * cannot.
   */
  protected abstract authorize(headers: Record<string, string>, key: string | undefined, context: ProviderContext): void | Promise<void>;

  /** The UpstreamError of a non-2xx answer, read from the provider's error envelope. */
  protected abstract errorOf(response: ErrorResponse, secrets: readonly string[]): UpstreamError;

  /** What an error text must never show: the model's key. */
  protected secretsOf(context: ProviderContext): string[] {
    return providerSecrets(this.dependencies.environment, context.model);
  }

  /** Sends the request, whole or streamed; resolves with a 2xx response, rejects with an UpstreamError otherwise. */
  protected send(request: ChatRequestOutput, context: ProviderContext, stream: boolean): Promise<Dispatcher.ResponseData> {
    return this.post(this.requestFor(request, context.model, stream), context, stream);
  }

  /**
   * Sends any request of the provider's API (a chat request's, an embeddings request's) with the
   * catalog's headers and the provider's key; resolves with a 2xx response, rejects with an
   * UpstreamError otherwise.
   */
  async post(upstreamRequest: UpstreamRequest, context: ProviderContext, stream = false): Promise<Dispatcher.ResponseData> {
    const { model } = context;
    const headers: Record<string, string> = {
      ...(model.upstream.headers ?? {}),
      ...(upstreamRequest.headers ?? {}),
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
      'user-agent': USER_AGENT,
    };
    await this.authorize(headers, providerKey(this.dependencies.environment, model), context);
    return postToUpstream({
      traceparent: context.traceparent,
      provider: this.name,
      pools: this.dependencies.pools,
      url: upstreamRequest.url,
      headers,
      body: upstreamRequest.body,
      signal: context.signal,
      parseError: (response) => this.errorOf(response, this.secretsOf(context)),
    });
  }

  /**
   * The JSON body of a whole 2xx answer; a body that is not JSON, not an object, or not `isWhole`
   * is a `malformed` failure saying `missing`.
   */
  async readWhole<T extends object>(response: Dispatcher.ResponseData, signal: AbortSignal, isWhole: (body: T) => boolean, missing: string): Promise<T> {
    const body = (await readJsonBody(response, this.name, signal)) as T;
    if (typeof body !== 'object' || body === null || !isWhole(body)) {
      throw new UpstreamError(missing, { provider: this.name, kind: 'malformed', status: response.statusCode });
    }
    return body;
  }

  /** Posts `request` and reads its whole answer (see readWhole): one JSON call, as the embeddings make. */
  async postForWhole<T extends object>(request: UpstreamRequest, context: ProviderContext, isWhole: (body: T) => boolean, missing: string): Promise<T> {
    const response = await this.post(request, context);
    return this.readWhole(response, context.signal, isWhole, missing);
  }
}
