/**
 * The response cache's key: which requests are the same question. A request is hashed after
 * normalization (the API it came in on, the catalog model that serves it and that model's
 * revision, and every field of the request that can change the answer: messages and content parts,
 * tools and tool_choice, the response format, sampling parameters, `seed`, stop sequences,
 * reasoning settings), with object keys sorted so that the same JSON in another key order is the
 * same question. Left out, since they never change the answer: `user`, `stream`,
 * `stream_options`, `metadata`, and the model the caller named (the served model counts instead:
 * `auto` and an alias that route to the same model share entries). The key never leaves the
 * gateway; its scope (the team) is beside it, never in it, so that a purge of a scope is one step.
 */
import { createHash } from 'node:crypto';

/** The request's fields that never change an answer. */
const IGNORED_FIELDS: ReadonlySet<string> = new Set(['model', 'stream', 'stream_options', 'user', 'metadata']);

/** What one cache key is computed from. */
export interface CacheKeyInput {
  /** The route of the API the request came in on (`/v1/chat/completions`): each API's answers are its own. */
  api: string;
  /** The catalog model that serves the request, after routing. */
  modelId: string;
  /** That model's catalog revision (Model.revision). */
  modelRevision: string;
  /** The request in the gateway's terms (a ChatRequest), its ignored fields left out here. */
  request: object;
  /** Anything else the answer depends on (the embeddings' texts, legacy functions), hashed as is. */
  extra?: unknown;
}

/** JSON with every object's keys in order, undefined and null members left out, bytes as base64. */
export function canonicalJson(value: unknown, ignored?: ReadonlySet<string>): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (value instanceof Uint8Array) return JSON.stringify(Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64'));
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  const members: string[] = [];
  for (const name of Object.keys(value).sort()) {
    if (ignored?.has(name)) continue;
    const member = (value as Record<string, unknown>)[name];
    if (member === undefined || member === null) continue;
    members.push(`${JSON.stringify(name)}:${canonicalJson(member)}`);
  }
  return `{${members.join(',')}}`;
}

/** The key of a request: the hex SHA-256 of its normalized form. */
export function cacheKey(input: CacheKeyInput): string {
  const hash = createHash('sha256');
  hash.update(`${input.api}\n${input.modelId}\n${input.modelRevision}\n`);
  hash.update(canonicalJson(input.request, IGNORED_FIELDS));
  if (input.extra !== undefined) hash.update(`\n${canonicalJson(input.extra)}`);
  return hash.digest('hex');
}

/**
 * Whether a request's sampling makes its answer repeatable enough to keep: a `seed`, or a
 * `temperature` at most `maxTemperature` (absent: the providers' default of 1).
 */
export function isDeterministicEnough(request: { temperature?: number | string | null; seed?: unknown }, maxTemperature: number): boolean {
  if (request.seed !== undefined && request.seed !== null) return true;
  return Number(request.temperature ?? 1) <= maxTemperature;
}

/** The scope a request's entries live in: its key's team (or the key without one), its key, or a shared group. */
export function cacheScope(scope: string, keyId: string, teamId: string): string {
  if (scope.startsWith('shared:')) return scope;
  if (scope === 'key' || !teamId) return `key:${keyId}`;
  return `team:${teamId}`;
}
