/**
 * The CacheService handlers. Lookup and Store read and write the entries (entries.ts), and with a
 * semantic key (and, for a Lookup, no exact key) the vectors of their questions too
 * (semantic-cache.ts): a Redis that does not answer is UNAVAILABLE at once, which the edge takes as
 * a miss. PutSettings, DeleteSettings and Purge are the operator's changes (cache-admin.ts), made
 * with the call's actor; WatchSettings pushes every target's settings at once and on every change
 * this replica reads.
 */
import { actorOf, GatewayError, requestIdOf, unary, WatchStreams } from '@gateway/grpc';
import { UNKNOWN_ACTOR } from '@gateway/keyspace';
import type { CacheServiceHandlers, SettingsSnapshot } from '@gateway/proto';
import type { CacheAdmin, Change } from './cache-admin.js';
import type { CacheMetrics } from './cache-metrics.js';
import type { CacheState } from './cache-state.js';
import type { EntryStore } from './entries.js';
import type { SemanticCache } from './semantic-cache.js';

/** What the handlers work with. */
export interface CacheServiceOptions {
  state: CacheState;
  entries: EntryStore;
  semantic: SemanticCache;
  admin: CacheAdmin;
  metrics: CacheMetrics;
}

/** The change a call makes: its actor and request id, as the admin API sent them. */
function changeOf(call: Parameters<typeof actorOf>[0]): Change {
  return { actor: actorOf(call) ?? UNKNOWN_ACTOR, requestId: requestIdOf(call) };
}

/** The handlers, and a way to end every open watch at shutdown. */
export function createCacheService(options: CacheServiceOptions): { handlers: CacheServiceHandlers; endWatches(): void } {
  const { state, entries, semantic, admin, metrics } = options;
  const watches = new WatchStreams<SettingsSnapshot>((count) => metrics.watchers.set(count));
  state.onChange(() => {
    const settings = state.settings();
    metrics.targets.set(settings.length);
    watches.push({ version: state.version, settings });
  });
  const notFound = (target: string) => GatewayError.of('not_found', `No cache settings for '${target.slice(0, 160)}'.`, { param: 'target' });

  return {
    handlers: {
      Lookup: unary(async (request) => {
        const address = { scope: request.scope ?? '', modelId: request.model_id ?? '' };
        if (request.semantic && !request.key) {
          const near = await semantic.lookup(address, request.semantic, request.threshold ?? 0).catch((error: unknown) => {
            metrics.semanticLookups.inc({ result: 'error' });
            throw error;
          });
          metrics.semanticLookups.inc({ result: near ? 'hit' : 'miss' });
          return near ?? {};
        }
        const entry = await entries.lookup({ ...address, key: request.key ?? '' }).catch((error: unknown) => {
          metrics.lookups.inc({ result: 'error' });
          throw error;
        });
        metrics.lookups.inc({ result: entry ? 'hit' : 'miss' });
        return entry ? { entry } : {};
      }, 'Lookup'),
      Store: unary(async (request) => {
        const ttl = request.ttl_seconds ?? 0;
        if (!request.entry || !request.scope || !request.key || ttl < 1)
          throw GatewayError.of('invalid_request', 'A Store names a scope, a key, an entry and a TTL.', { param: 'entry' });
        const address = { scope: request.scope, key: request.key, modelId: request.model_id ?? '' };
        const stored = request.semantic ? semantic.store(address, request.entry, ttl, request.semantic) : entries.store(address, request.entry, ttl);
        const result = await stored.catch((error: unknown) => {
          metrics.stores.inc({ result: 'error' });
          throw error;
        });
        metrics.stores.inc({ result: result.result });
        metrics.storedBytes.inc(result.bytes);
        return result.result === 'stored' ? { stored: true } : { stored: false, reason: result.result };
      }, 'Store'),
      PutSettings: unary((request, call) => admin.put(request, changeOf(call)), 'PutSettings'),
      GetSettings: unary(async (request) => {
        const settings = await admin.get(request.target ?? '');
        if (!settings) throw notFound(request.target ?? '');
        return settings;
      }, 'GetSettings'),
      ListSettings: unary(async () => ({ settings: state.settings() }), 'ListSettings'),
      DeleteSettings: unary(async (request, call) => {
        if (!(await admin.delete(request.target ?? '', changeOf(call)))) throw notFound(request.target ?? '');
        return {};
      }, 'DeleteSettings'),
      Purge: unary(async (request, call) => {
        const purge = await admin.purge(request, changeOf(call));
        metrics.purges.inc({ kind: purge.kind });
        return { purged: purge.names };
      }, 'Purge'),
      // Before the first read there is nothing to push: the first change read sends it.
      WatchSettings: (call) => watches.add(call),
    },
    endWatches: () => watches.end(),
  };
}
