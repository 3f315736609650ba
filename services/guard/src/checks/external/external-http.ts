/**
 * One JSON call to an outside service over fetch, with its failures turned into
 * ExternalCheckErrors: the signal's abort is `deadline_exceeded`, a connection that cannot be made
 * or breaks is `unavailable`, a non-2xx answer is `upstream_error` (or `unavailable` for 429 and
 * 502-504), and a body that is not JSON is `upstream_error`. The service's error message is not
 * repeated (OpenAI's echoes part of a wrong key, others may quote the input): only its status and
 * error code are.
 */
import { ExternalCheckError, reasonOfStatus, safeCode, withoutSecrets } from './external-check-error.js';

/** One POST of a JSON body. */
export interface JsonCall {
  service: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal;
  fetch: typeof fetch;
  /** What an error message must not contain (the credential, a token). */
  secrets: readonly string[];
}

/** The error code of a JSON error body, in the envelopes the services use (`{error:{code}}`, `{error:{status}}`, `{code}`). */
function errorCodeOf(text: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof body !== 'object' || body === null) return undefined;
  const { error, code } = body as { error?: unknown; code?: unknown };
  if (typeof error === 'object' && error !== null) {
    const inner = error as { code?: unknown; status?: unknown; type?: unknown };
    return safeCode(inner.code) ?? safeCode(inner.status) ?? safeCode(inner.type);
  }
  return safeCode(code);
}

/** The code a failed fetch's cause carries (`ECONNREFUSED`, `UND_ERR_SOCKET`). */
function networkCodeOf(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  return safeCode(cause?.code) ?? safeCode((error as { code?: unknown }).code);
}

/** The ExternalCheckError of an error thrown while the call was under way: aborted or not reachable. */
export function transportFailure(service: string, error: unknown, signal: AbortSignal): ExternalCheckError {
  if (error instanceof ExternalCheckError) return error;
  if (signal.aborted) return new ExternalCheckError('deadline_exceeded', service, 'no answer before the deadline');
  const code = networkCodeOf(error);
  return new ExternalCheckError('unavailable', service, `cannot be reached${code ? ` (${code})` : ''}`);
}

/** POSTs the body and resolves with the parsed JSON answer of a 2xx; rejects with an ExternalCheckError otherwise. */
export async function postJson(call: JsonCall): Promise<unknown> {
  const { service, signal } = call;
  try {
    const response = await call.fetch(call.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...call.headers },
      body: JSON.stringify(call.body),
      signal,
    });
    const text = await response.text();
    if (!response.ok) {
      const code = errorCodeOf(text);
      throw new ExternalCheckError(
        reasonOfStatus(response.status),
        service,
        withoutSecrets(`answered ${response.status}${code ? ` (${code})` : ''}`, call.secrets),
      );
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new ExternalCheckError('upstream_error', service, `answered ${response.status} with a body that is not JSON`);
    }
  } catch (error) {
    throw transportFailure(service, error, signal);
  }
}

/** The ExternalCheckError of an answer whose JSON is not of the documented shape. */
export function malformed(service: string, what: string): ExternalCheckError {
  return new ExternalCheckError('upstream_error', service, `answered without ${what}`);
}

/** `base` without its trailing slashes, `fallback` when it is empty. */
export function endpointOf(base: string, fallback: string): string {
  return (base === '' ? fallback : base).replace(/\/+$/, '');
}

/**
 * Maps `items` with at most `limit` calls of `run` under way at once, in order; rejects with the
 * first failure, after which no further call starts (those under way run on: their signal is the
 * caller's to abort).
 */
export async function mapLimited<Item, Result>(items: readonly Item[], limit: number, run: (item: Item, index: number) => Promise<Result>): Promise<Result[]> {
  const results = new Array<Result>(items.length);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        results[index] = await run(items[index]!, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
