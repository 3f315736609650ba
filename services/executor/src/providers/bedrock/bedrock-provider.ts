/**
 * The adapter for Amazon Bedrock's Converse API: POST {base_url}/model/{modelId}/converse (whole)
 * and /converse-stream (AWS's binary event stream, event-stream.ts), translated to and from the
 * gateway's OpenAI-shaped messages through the anthropic adapter's conversion (convert-request.ts,
 * map-response.ts). The model id may be a foundation model id, a cross-region inference profile
 * (`us.anthropic.claude-...`, `global.` ...) or an ARN: it goes in the path, percent-encoded.
 *
 * Auth: SigV4 for the catalog model's region with AWS's default credential chain
 * (aws-request-signer.ts), or with the upstream's own `aws_credentials` (a role, a profile, named
 * key variables: aws-identities.ts); a model whose catalog entry names api_key_env sends that
 * Bedrock API key as a bearer token instead.
 *
 * Transport: AWS's signer and codec over the executor's own keep-alive pools rather than
 * @aws-sdk/client-bedrock-runtime's client, so that Bedrock gets what every other upstream gets:
 * the connect, first-byte and idle timeouts, the call's AbortSignal closing the connection at
 * once, reads only as fast as the caller pulls, the executor's retries and breakers (the SDK
 * client would retry on its own), and failures as UpstreamErrors from one error table.
 *
 * Embeddings: InvokeModel (POST /model/{modelId}/invoke) with the Titan or Cohere body, signed
 * the same way (embeddings.ts).
 */
import type { Dispatcher } from 'undici';
import type { ChatRequestOutput, ChatResponse } from '@gateway/proto';
import type { Provider, ProviderContext, ProviderStreamEvent } from '../provider.js';
import { UpstreamError } from '../upstream-error.js';
import { headerValue, postToUpstream, providerKey, providerSecrets, readJsonBody, type HttpProviderDependencies } from '../upstream-http.js';
import { AwsIdentities } from './aws-identities.js';
import { AwsRequestSigner, defaultCredentialsProvider, type AwsCredentialsProvider } from './aws-request-signer.js';
import { toConverseRequest } from './convert-request.js';
import { BedrockEmbeddings } from './embeddings.js';
import { readEventStream } from './event-stream.js';
import { ConverseStreamTranslator, fromConverseResponse } from './map-response.js';
import { streamErrorOf, upstreamErrorFromResponse } from './parse-upstream-error.js';
import type { ConverseResponse, ConverseStreamEvent, ConverseStreamEvents } from './wire-types.js';
import { BEDROCK_PROVIDER } from '../provider-names.js';

/** Sent as `user-agent` on every upstream request. */
const USER_AGENT = 'llm-gateway-executor/0.1';

/** The event types of a ConverseStream answer this adapter reads; others (added later) are skipped. */
const STREAM_EVENT_TYPES = new Set<keyof ConverseStreamEvents>([
  'messageStart',
  'contentBlockStart',
  'contentBlockDelta',
  'contentBlockStop',
  'messageStop',
  'metadata',
]);

/** What the bedrock adapter needs from its process. */
export interface BedrockDependencies extends HttpProviderDependencies {
  /** Where SigV4 credentials of upstreams naming no aws_credentials come from; AWS's default Node credential chain unless given. */
  readonly awsCredentials?: AwsCredentialsProvider;
}

/** The URL of Converse or ConverseStream for a model id at a base URL (any path of the base URL kept before `/model`). */
export function converseUrl(baseUrl: string, modelId: string, stream: boolean): URL {
  return modelUrl(baseUrl, modelId, stream ? 'converse-stream' : 'converse');
}

/** The URL of a runtime operation (converse, converse-stream, invoke) on a model id at a base URL. */
function modelUrl(baseUrl: string, modelId: string, operation: string): URL {
  const url = new URL(baseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/model/${encodeURIComponent(modelId)}/${operation}`;
  return url;
}

/** The bedrock adapter. */
export class BedrockProvider implements Provider {
  readonly name = BEDROCK_PROVIDER;
  readonly embeddings = new BedrockEmbeddings(this);
  private readonly signer: AwsRequestSigner;
  private readonly identities: AwsIdentities;

  constructor(private readonly dependencies: BedrockDependencies) {
    this.signer = new AwsRequestSigner(this.name);
    this.identities = new AwsIdentities(dependencies.environment, dependencies.awsCredentials ?? defaultCredentialsProvider());
  }

  /** A whole Converse answer, translated to a ChatResponse. */
  async complete(request: ChatRequestOutput, context: ProviderContext): Promise<ChatResponse> {
    const response = await this.converse(request, context, false);
    const body = (await readJsonBody(response, this.name, context.signal)) as ConverseResponse | null;
    if (typeof body !== 'object' || body === null || !Array.isArray(body.output?.message?.content)) {
      throw new UpstreamError('upstream sent an answer without an output message', { provider: this.name, kind: 'malformed', status: response.statusCode });
    }
    return fromConverseResponse(body, context.model.id, headerValue(response.headers, 'x-amzn-requestid'));
  }

  /** A ConverseStream answer: OpenAI-shaped chunks as the events arrive, then the usage. */
  async *stream(request: ChatRequestOutput, context: ProviderContext): AsyncGenerator<ProviderStreamEvent> {
    const response = await this.converse(request, context, true);
    const translator = new ConverseStreamTranslator(this.name, context.model.id, headerValue(response.headers, 'x-amzn-requestid'));
    // Read to the end of the response after metadata: that gives the connection back to the pool.
    for await (const message of readEventStream(response.body, { provider: this.name, signal: context.signal })) {
      if (message.messageType === 'exception' || message.messageType === 'error') {
        throw streamErrorOf(this.name, message.type, message.payload, this.secretsOf(context));
      }
      if (message.messageType !== 'event' || !STREAM_EVENT_TYPES.has(message.type as keyof ConverseStreamEvents)) continue;
      if (typeof message.payload !== 'object' || message.payload === null) {
        throw new UpstreamError(`upstream sent a ${message.type} event that is not an object`, { provider: this.name, kind: 'malformed' });
      }
      const event = { type: message.type, payload: message.payload } as ConverseStreamEvent;
      for (const chunk of translator.accept(event)) yield { type: 'chunk', chunk };
    }
    if (!translator.finished) {
      throw new UpstreamError('upstream stream ended before messageStop and metadata', { provider: this.name, kind: 'truncated', status: response.statusCode });
    }
    yield { type: 'usage', usage: translator.totalUsage() };
  }

  /** What an error text must never show: the model's Bedrock API key, or the keys its aws_credentials name. */
  private secretsOf(context: ProviderContext): string[] {
    const aws = context.model.upstream.aws_credentials;
    const named = [aws?.secret_access_key_env, aws?.session_token_env].flatMap((name) => {
      const value = name === undefined ? undefined : this.dependencies.environment[name];
      return value ? [value] : [];
    });
    return [...providerSecrets(this.dependencies.environment, context.model), ...named];
  }

  /** InvokeModel with a JSON body (the embeddings' call), signed as Converse is. */
  invoke(body: string, context: ProviderContext): Promise<Dispatcher.ResponseData> {
    return this.send(modelUrl(context.model.upstream.base_url ?? '', context.model.upstream.model, 'invoke'), body, 'application/json', context);
  }

  /** A Converse or ConverseStream call. */
  private converse(request: ChatRequestOutput, context: ProviderContext, stream: boolean): Promise<Dispatcher.ResponseData> {
    const { model } = context;
    const url = converseUrl(model.upstream.base_url ?? '', model.upstream.model, stream);
    return this.send(url, JSON.stringify(toConverseRequest(request, model)), stream ? 'application/vnd.amazon.eventstream' : 'application/json', context);
  }

  /** Signs (or authorizes with the API key) and sends the request; resolves with a 2xx response, rejects with an UpstreamError otherwise. */
  private async send(url: URL, body: string, accept: string, context: ProviderContext): Promise<Dispatcher.ResponseData> {
    const { model } = context;
    const headers: Record<string, string> = {
      ...(model.upstream.headers ?? {}),
      'content-type': 'application/json',
      accept,
      'user-agent': USER_AGENT,
    };
    const key = providerKey(this.dependencies.environment, model);
    const authorized = key
      ? { ...headers, authorization: `Bearer ${key}` }
      : await this.signer.sign({ url, headers, body, region: model.upstream.region ?? '', identity: this.identities.of(model.upstream) });
    return postToUpstream({
      traceparent: context.traceparent,
      provider: this.name,
      pools: this.dependencies.pools,
      url,
      headers: authorized,
      body,
      signal: context.signal,
      parseError: (response) => upstreamErrorFromResponse(this.name, response, this.secretsOf(context)),
    });
  }
}
