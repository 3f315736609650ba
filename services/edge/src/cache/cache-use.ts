/** What the response cache does for one request, as the pipeline carries it (Completion.cache). */
import type { CacheEntryOutput, SemanticKey } from '@gateway/proto';
import type { ResolvedSettings } from '@gateway/response-cache';

/** What the cache did for a request, as `gateway.cache` and its usage event show it. */
export type CacheStatus = 'hit' | 'miss' | 'skip';

/** A request's use of the cache, set by the cache stage (Completion.cache). */
export interface CacheUse {
  status: CacheStatus;
  settings: ResolvedSettings;
  scope: string;
  key: string;
  /** Whether its answer is kept once complete (a miss, or a refresh by `Cache-Control: no-cache`). */
  store: boolean;
  /** A hit: the entry, and its age when found. */
  entry?: CacheEntryOutput;
  ageMs?: number;
  /** A semantic hit: how near the kept question is to the request's (cosine similarity). */
  similarity?: number;
  /** A miss of a semantic lookup: the request's question as a vector, kept with its answer. */
  semantic?: SemanticKey;
  /** A hit, once reported: what its answer would cost now, less what the hit costs (pico-USD). */
  savedPico?: bigint;
  /** A request leading others in flight for its key: hands them the answer (or nothing), once. */
  settle?: (entry: CacheEntryOutput | undefined) => void;
}
