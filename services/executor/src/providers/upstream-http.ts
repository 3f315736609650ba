/**
 * What every HTTP adapter (openai-compatible, anthropic, gemini) does the same way: send a JSON
 * POST through the origin's keep-alive pool with the call's AbortSignal, turn transport failures
 * and non-2xx answers into UpstreamErrors, read the retry hint of a 429, and keep our keys out of
 * every message. Provider-specific parts (the error envelope, the wire format) stay in each
 * provider's folder.
 */
import { GatewayError } from '@gateway/grpc';
import type { Dispatcher } from 'undici';
import { UpstreamError } from './upstream-error.js';
import type { UpstreamPools } from './upstream-pools.js';

/** What an HTTP adapter needs from its process. */
export interface HttpProviderDependencies {
  readonly pools: UpstreamPools;
  /** The environment the keys are read from, by the variable name the catalog gives. */
  readonly environment: Readonly<Record<string, string | undefined>>;
}

/**
 * The provider key of a model, read from the environment variable the catalog names; undefined
 * when the model names none or the variable is empty.
 */
export function providerKey(environment: Readonly<Record<string, string | undefined>>, model: { upstream: { api_key_env?: string } }): string | undefined {
  const variable = model.upstream.api_key_env;
  return (variable ? environment[variable] : undefined) || undefined;
}

/** The refusal of a model the catalog gives no upstream base_url (its provider needs one). */
export function missingBaseUrl(model: { id: string }): GatewayError {
  return GatewayError.of('model_unavailable', `Model ${model.id} has no upstream base_url in the catalog.`);
}

/** The secrets an error text must never show: the model's provider key, when it has one. */
export function providerSecrets(environment: Readonly<Record<string, string | undefined>>, model: { upstream: { api_key_env?: string } }): string[] {
  const key = providerKey(environment, model);
  return key ? [key] : [];
}

/** Response headers as undici gives them. */
export type ResponseHeaders = Record<string, string | string[] | undefined>;

/** Bodies of error answers are read up to this many characters; the rest is not needed. */
export const MAX_ERROR_BODY_CHARS = 16_384;

/** The first value of a response header. */
export function headerValue(headers: ResponseHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The wait the upstream asked for: `retry-after-ms` (milliseconds, OpenAI's), else `retry-after`
 * in seconds or as an HTTP date. Undefined when absent or unreadable.
 */
export function parseRetryAfter(headers: ResponseHeaders, now = Date.now()): number | undefined {
  const milliseconds = Number.parseFloat(headerValue(headers, 'retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return Math.ceil(milliseconds);
  const retryAfter = headerValue(headers, 'retry-after')?.trim();
  if (!retryAfter) return undefined;
  if (/^\d+(\.\d+)?$/.test(retryAfter)) return Math.ceil(Number(retryAfter) * 1000);
  const date = Date.parse(retryAfter);
  return Number.isNaN(date) ? undefined : Math.max(date - now, 0);
}

/** Replaces each secret in a text; secrets shorter than 8 characters are not worth matching. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let scrubbed = text;
  for (const secret of secrets) if (secret.length >= 8) scrubbed = scrubbed.split(secret).join('[redacted]');
  return scrubbed;
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

/**
 * An UpstreamError for a transport failure: undici's timeouts, refused, reset or unresolvable
 * connections. `phase` says whether the response headers had arrived: before them (`request`) the
 * upstream gave no answer at all, so the model is `unavailable`; after them (`body`) it answered
 * and then stalled or dropped the connection, an answer the gateway cannot use (`unusable`).
 */
export function upstreamErrorFromTransport(provider: string, error: unknown, phase: 'request' | 'body'): UpstreamError {
  const code = (error as { code?: unknown }).code;
  const failureClass = phase === 'request' ? 'unavailable' : 'unusable';
  if (typeof code === 'string' && TIMEOUT_CODES.has(code)) {
    const which = code === 'UND_ERR_CONNECT_TIMEOUT' ? 'connect' : code === 'UND_ERR_HEADERS_TIMEOUT' ? 'first-byte' : 'idle';
    return new UpstreamError(`upstream ${which} timeout`, { provider, kind: 'timeout', failureClass, cause: error });
  }
  const what = phase === 'request' ? 'upstream connection failed' : 'upstream connection dropped mid-body';
  return new UpstreamError(`${what}${typeof code === 'string' ? ` (${code})` : ''}`, { provider, kind: 'connection', failureClass, cause: error });
}

/** Reads at most `limit` characters of a body, then drops the rest. */
export async function readLimited(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  let text = '';
  for await (const bytes of body as AsyncIterable<Buffer>) {
    text += bytes.toString('utf8');
    if (text.length >= limit) {
      body.destroy();
      break;
    }
  }
  return text.slice(0, limit);
}

/** A non-2xx answer: its status, headers and the first MAX_ERROR_BODY_CHARS of its body. */
export interface ErrorResponse {
  readonly status: number;
  readonly headers: ResponseHeaders;
  readonly bodyText: string;
}

/** Builds the UpstreamError of a non-2xx answer; each provider reads its own error envelope. */
export type ErrorResponseParser = (response: ErrorResponse) => UpstreamError;

/** What a provider read in an error envelope. */
export interface ErrorEnvelope {
  /** The envelope's error type or status name, shown after the HTTP status. */
  readonly type?: string;
  /** The upstream's message, already scrubbed (upstreamMessageOf). */
  readonly message?: string;
  /** The status the failure counts as, when not the HTTP status (a key failure sent as a 400). */
  readonly status?: number;
  /** The wait the envelope asks for; the retry-after header otherwise. */
  readonly retryAfterMs?: number;
}

/** The upstream's own message, with our secrets replaced, up to 1000 characters; undefined when it sent none. */
export function upstreamMessageOf(message: unknown, secrets: readonly string[]): string | undefined {
  return typeof message === 'string' ? scrubSecrets(message, secrets).slice(0, 1000) : undefined;
}

/**
 * The UpstreamError of a non-2xx answer: "upstream answered {status}[ {type}][: {message}]", with
 * the envelope's retry hint, else the retry-after header's.
 */
export function httpUpstreamError(provider: string, response: ErrorResponse, envelope: ErrorEnvelope): UpstreamError {
  const { status, headers } = response;
  return new UpstreamError(`upstream answered ${status}${envelope.type ? ` ${envelope.type}` : ''}${envelope.message ? `: ${envelope.message}` : ''}`, {
    provider,
    kind: 'http',
    status: envelope.status ?? status,
    retryAfterMs: envelope.retryAfterMs ?? parseRetryAfter(headers),
    upstreamMessage: envelope.message,
  });
}

/** One JSON POST to an upstream. */
export interface UpstreamPost {
  readonly provider: string;
  readonly pools: UpstreamPools;
  /** The full URL; its origin picks the pool. */
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** The call's signal: aborting it closes the upstream connection at once. */
  readonly signal: AbortSignal;
  readonly parseError: ErrorResponseParser;
  /** Sent as the `traceparent` header, when tracing is on. */
  readonly traceparent?: string | undefined;
}

/**
 * Sends the POST; resolves with a 2xx response whose body the caller must consume or destroy,
 * rejects with an UpstreamError otherwise (or with the signal's AbortError once it is aborted).
 */
export async function postToUpstream(post: UpstreamPost): Promise<Dispatcher.ResponseData> {
  let response: Dispatcher.ResponseData;
  try {
    response = await post.pools.poolFor(post.url.origin).request({
      method: 'POST',
      path: `${post.url.pathname}${post.url.search}`,
      headers: post.traceparent ? { ...post.headers, traceparent: post.traceparent } : post.headers,
      // As bytes: undici keeps the body it was given until the response ends, beside the bytes it
      // encodes a string to; a long stream would hold both copies.
      body: Buffer.from(post.body),
      signal: post.signal,
    });
  } catch (error) {
    post.signal.throwIfAborted();
    throw upstreamErrorFromTransport(post.provider, error, 'request');
  }
  if (response.statusCode >= 200 && response.statusCode < 300) return response;
  const text = await readLimited(response.body, MAX_ERROR_BODY_CHARS).catch(() => '');
  throw post.parseError({ status: response.statusCode, headers: response.headers, bodyText: text });
}

/** Reads a whole 2xx body and parses it as JSON; a body that is not JSON is a `malformed` failure. */
export async function readJsonBody(response: Dispatcher.ResponseData, provider: string, signal: AbortSignal): Promise<unknown> {
  let text: string;
  try {
    text = await response.body.text();
  } catch (error) {
    signal.throwIfAborted();
    throw upstreamErrorFromTransport(provider, error, 'body');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new UpstreamError('upstream sent a body that is not JSON', { provider, kind: 'malformed', status: response.statusCode, cause: error });
  }
}

/**
 * The path under a catalog base_url: `base` is the path the provider's API lives at
 * (`/v1/messages`); a base_url that already ends with the version segment (`.../v1`) does not get
 * it twice, so operators may write either form.
 */
export function upstreamUrl(baseUrl: string, versionSegment: string, rest: string): URL {
  const base = new URL(baseUrl);
  let path = base.pathname.replace(/\/+$/, '');
  if (!path.endsWith(`/${versionSegment}`)) path = `${path}/${versionSegment}`;
  const url = new URL(base.origin);
  url.pathname = `${path}/${rest}`;
  url.search = base.search;
  return url;
}
