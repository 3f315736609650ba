/**
 * The cache stage of a completion, between routing (and the input's guardrails) and execution: it
 * decides what the cache does for the request (nothing when its settings leave the cache off;
 * `skip`; `miss`; `hit`), looks the request's key up with a deadline of a few milliseconds (a
 * cache that fails or is slow is a miss), joins a request already in flight on this edge for the
 * same key rather than asking the model again, and keeps a complete answer once it is reported.
 *
 * One piece: the decision, the lookup, the joining and the store of one request share its state
 * (CacheUse) and this class's map of requests in flight, so they are one class.
 */
import { randomUUID } from 'node:crypto';
import { callUnary } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';
import type {
  CacheEntryOutput,
  CacheServiceClient,
  ChatResponseOutput,
  EmbedResponseOutput,
  LookupRequest,
  LookupResponseOutput,
  SemanticKey,
} from '@gateway/proto';
import { cacheKey, cacheScope, isDeterministicEnough, type ResolvedSettings } from '@gateway/response-cache';
import type { Completion } from './completion.js';
import type { CacheSettingsView } from '../cache/cache-settings-view.js';
import type { CacheUse } from '../cache/cache-use.js';
import { embedQuestion, type QuestionEmbedderDependencies } from './question-embedder.js';
import { semanticQuestion } from '../cache/semantic-question.js';

/** A complete answer to keep: a completion's or an embeddings'. */
export type KeptAnswer = { chat: ChatResponseOutput } | { embeddings: EmbedResponseOutput };

/** What the caller asked of the cache, in its Cache-Control header (as HTTP caches read it). */
function cacheControl(header: string | string[] | undefined): { noStore: boolean; noCache: boolean } {
  const value = (Array.isArray(header) ? header.join(',') : (header ?? '')).toLowerCase();
  if (!value) return { noStore: false, noCache: false };
  const directives = new Set(value.split(',').map((directive) => directive.trim().split('=')[0]));
  return { noStore: directives.has('no-store'), noCache: directives.has('no-cache') || (directives.has('max-age') && /max-age\s*=\s*0\b/.test(value)) };
}

/** Whether a request's answer may be kept at all: deterministic enough, and nothing a kept answer would lose. */
function cacheable(completion: Completion, settings: ResolvedSettings): boolean {
  const { parsed } = completion;
  if (parsed.embeddings) return true;
  return parsed.request.logprobs !== true && isDeterministicEnough(parsed.request, settings.maxTemperature);
}

/** A fresh id for a hit's completion (`chatcmpl-...`): two answers never share one. */
export function hitCompletionId(): string {
  return `chatcmpl-${randomUUID().replaceAll('-', '')}`;
}

/** The edge's counts of its cache calls. */
function cacheMetrics(registry: prometheus.Registry | undefined) {
  // biome-ignore format: one metric a line, a table of name, help and the label each is counted by
  return serviceMetrics(registry, {
    requests: metric.counterBy('gateway_edge_cache_requests_total', 'Requests the cache settings cover, by what the cache did (hit, miss, skip).', 'status', ['hit', 'miss', 'skip']),
    joined: metric.counter('gateway_edge_cache_joined_total', 'Requests answered by joining an identical one in flight on this edge.'),
    failures: metric.counterBy('gateway_edge_cache_failures_total', 'Cache calls that failed or ran past their deadline (lookup, semantic: the request was a miss), by call.', 'call', ['lookup', 'semantic', 'store']),
    embeddings: metric.counterBy('gateway_edge_cache_embeddings_total', "Questions a semantic lookup embedded with its settings' semantic model, by result (failed: looked up exactly only).", 'result', ['embedded', 'failed']),
  });
}

/** What the cache stage uses of the edge. */
export interface ResponseCacheDependencies {
  cache: CacheServiceClient;
  cacheSettings: CacheSettingsView;
  lookupDeadlineMs: number;
  /** How long a request waits for an identical one in flight before it asks the model itself (the completion deadline). */
  joinDeadlineMs: number;
  logger: Logger;
  registry?: prometheus.Registry;
  /** Semantic lookups' embeddings: without it, settings that name a semantic model look up exactly only. */
  embedder?: QuestionEmbedderDependencies;
}

/** How long a Store may take: it runs after the answer left, so only its own bound matters. */
const STORE_DEADLINE_MS = 2_000;

/** The cache stage, one per edge. */
export class ResponseCache {
  /** The requests leading on this edge, by scope and key: what an identical request joins. */
  private readonly inFlight = new Map<string, Promise<CacheEntryOutput | undefined>>();
  private readonly metrics: ReturnType<typeof cacheMetrics>;

  constructor(private readonly deps: ResponseCacheDependencies) {
    this.metrics = cacheMetrics(deps.registry);
  }

  /**
   * Decides what the cache does for a routed request and sets completion.cache (left undefined
   * when its settings leave the cache off); resolves the entry to answer with on a hit.
   */
  async lookup(completion: Completion): Promise<CacheEntryOutput | undefined> {
    const { decision, routing } = completion;
    const keyId = decision.key_id ?? '';
    const teamId = decision.team_id ?? '';
    const modelId = routing.model.id ?? '';
    const settings = this.deps.cacheSettings.settingsFor({ keyId, teamId, modelId });
    if (!settings) return undefined;
    const scope = cacheScope(settings.scope, keyId, teamId);
    const control = cacheControl(completion.request.headers['cache-control']);
    // Output guardrails check an answer as it is made, for this request's policies: such a request is answered by its model.
    if (control.noStore || completion.guard || !cacheable(completion, settings))
      return this.decided(completion, { status: 'skip', settings, scope, key: '', store: false });
    const { parsed } = completion;
    const keyOf = { api: completion.wire.route, modelId, modelRevision: routing.model.revision ?? '' };
    const key = cacheKey({
      ...keyOf,
      request: parsed.request,
      extra: {
        legacy_functions: parsed.legacyFunctions === true,
        ...(parsed.embeddings && {
          embeddings: { texts: parsed.embeddings.texts, tokens: parsed.embeddings.tokenArrays, dimensions: parsed.embeddings.dimensions },
        }),
      },
    });
    if (control.noCache) {
      // A refresh: answered by its model and kept, for near questions too when the settings are semantic.
      const refresh: CacheUse = { status: 'skip', settings, scope, key, store: true };
      const semantic = await this.semanticKey(completion, refresh, keyOf);
      return this.decided(completion, { ...refresh, ...(semantic && { semantic }) });
    }
    const flight = `${scope}\n${modelId}\n${key}`;
    const entry =
      (await this.join(flight, completion)) ??
      (await this.fetch({ scope, key, model_id: modelId }, completion))?.entry ??
      (await this.join(flight, completion));
    if (entry) return this.hit(completion, { status: 'hit', settings, scope, key, store: false }, entry);
    // A miss: this request leads, and every identical one that arrives meanwhile joins it.
    let settle!: (entry: CacheEntryOutput | undefined) => void;
    const answer = new Promise<CacheEntryOutput | undefined>((resolve) => {
      settle = (found) => {
        if (this.inFlight.get(flight) === answer) this.inFlight.delete(flight);
        resolve(found);
      };
    });
    this.inFlight.set(flight, answer);
    const use: CacheUse = { status: 'miss', settings, scope, key, store: true, settle };
    // Semantic settings: the nearest kept question of the same context may answer it.
    const semantic = await this.semanticKey(completion, use, keyOf);
    if (semantic) {
      use.semantic = semantic;
      const near = await this.fetch({ scope, key: '', model_id: modelId, semantic, threshold: settings.semanticThreshold }, completion, 'semantic');
      if (near?.entry) {
        settle(near.entry);
        return this.hit(
          completion,
          { ...use, status: 'hit', store: false, settle: undefined, semantic: undefined, similarity: near.similarity ?? 0 },
          near.entry,
        );
      }
    }
    return this.decided(completion, use);
  }

  /** A hit on `entry`, with its age. */
  private hit(completion: Completion, use: CacheUse, entry: CacheEntryOutput): CacheEntryOutput | undefined {
    const ageMs = Math.max(0, Date.now() - Number(entry.created_at_ms ?? 0));
    return this.decided(completion, { ...use, entry, ageMs });
  }

  /**
   * The semantic key of a request its settings look up semantically: its question embedded with the
   * settings' semantic model, and the hash of everything else; undefined for exact lookups only
   * (no semantic model, an embeddings request, no question of text, an embedding that failed).
   */
  private async semanticKey(
    completion: Completion,
    use: CacheUse,
    key: { api: string; modelId: string; modelRevision: string },
  ): Promise<SemanticKey | undefined> {
    const embedder = this.deps.embedder;
    const model = use.settings.semanticModel;
    if (!embedder || !model || completion.parsed.embeddings) return undefined;
    const question = semanticQuestion(completion.parsed.request);
    if (!question) return undefined;
    const vector = await embedQuestion(embedder, completion, model, question.text);
    this.metrics.embeddings.inc({ result: vector ? 'embedded' : 'failed' });
    if (!vector) return undefined;
    const context = cacheKey({ ...key, request: question.context, extra: { semantic: true, legacy_functions: completion.parsed.legacyFunctions === true } });
    return { context, vector, embedding_model: model };
  }

  private decided(completion: Completion, use: CacheUse): CacheEntryOutput | undefined {
    completion.cache = use;
    this.metrics.requests.inc({ status: use.status });
    return use.entry;
  }

  /** The answer of an identical request in flight on this edge, once it has one; undefined when none leads or it got none. */
  private async join(flight: string, completion: Completion): Promise<CacheEntryOutput | undefined> {
    const leading = this.inFlight.get(flight);
    if (!leading) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.deps.joinDeadlineMs);
      completion.signal.addEventListener('abort', () => resolve(undefined), { once: true });
    });
    const entry = await Promise.race([leading, gaveUp]);
    clearTimeout(timer);
    if (entry) this.metrics.joined.inc();
    return entry;
  }

  /** The cache's answer to a lookup; a failure or a late answer is a miss. */
  private async fetch(request: LookupRequest, completion: Completion, call: 'lookup' | 'semantic' = 'lookup'): Promise<LookupResponseOutput | undefined> {
    const { cache } = this.deps;
    try {
      return await callUnary<LookupRequest, LookupResponseOutput>(cache, cache.Lookup, request, {
        deadlineMs: this.deps.lookupDeadlineMs,
        requestId: completion.requestId,
        signal: completion.signal,
      });
    } catch (error) {
      this.metrics.failures.inc({ call });
      this.deps.logger.debug({ err: (error as Error).message }, 'cache lookup failed; a miss');
      return undefined;
    }
  }

  /**
   * Keeps a completed request's answer, once reported (its cost known), and hands it to the
   * requests that joined it. Not kept: an answer of a fallback model, a refusal, a filtered or
   * blocked answer, one the executor reported no usage for.
   */
  keep(completion: Completion, answer: KeptAnswer): void {
    const use = completion.cache;
    if (!use?.store) return;
    const chat = 'chat' in answer ? answer.chat : undefined;
    const refused = chat?.choices.some((choice) => choice.finish_reason === 'FINISH_REASON_CONTENT_FILTER' || Boolean(choice.message?.refusal)) ?? false;
    if (completion.attempts.length > 0 || refused || (chat && chat.choices.length === 0)) {
      this.release(completion);
      return;
    }
    const entry: CacheEntryOutput = {
      ...answer,
      answer: 'chat' in answer ? 'chat' : 'embeddings',
      usage: completion.usage,
      model_id: completion.answered.id ?? '',
      model_version: completion.answered.revision ?? '',
      provider: completion.provider,
      deployment_id: completion.deploymentId,
      created_at_ms: Date.now(),
      cost_pico_usd: Number(completion.costPico),
    };
    use.store = false;
    use.settle?.(entry);
    const { cache } = this.deps;
    callUnary(
      cache,
      cache.Store,
      {
        scope: use.scope,
        key: use.key,
        model_id: entry.model_id,
        entry,
        ttl_seconds: use.settings.ttlSeconds,
        ...(use.semantic && { semantic: use.semantic }),
      },
      {
        deadlineMs: STORE_DEADLINE_MS,
        requestId: completion.requestId,
      },
    ).catch((error: unknown) => {
      this.metrics.failures.inc({ call: 'store' });
      this.deps.logger.warn({ err: (error as Error).message }, 'cache store failed; the answer is not kept');
    });
  }

  /** A request that leads and ended without an answer to keep: the requests that joined it ask their model. */
  release(completion: Completion): void {
    const use = completion.cache;
    if (!use) return;
    use.store = false;
    use.settle?.(undefined);
  }
}
