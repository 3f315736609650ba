/**
 * The CacheService handlers. Lookup and Store read and write the entries (entries.ts): a Redis
 * that does not answer is UNAVAILABLE at once, which the edge takes as a miss. PutSettings,
 * DeleteSettings and Purge change the shared state (cache-state.ts), each logged and added to
 * auth's audit trail with its actor; WatchSettings pushes every target's settings at once and on
 * every change this replica reads.
 */
import { actorOf, GatewayError, requestIdOf, unary, WatchStreams } from '@gateway/grpc';
import { type AuditLog, UNKNOWN_ACTOR } from '@gateway/keyspace';
import type { Logger } from '@gateway/logger';
import type { CacheServiceHandlers, CacheSettingsOutput, PurgeRequestOutput, SettingsSnapshot } from '@gateway/proto';
import { TARGET_PATTERN, validateSettings } from '@gateway/response-cache';
import type { CacheMetrics } from './cache-metrics.js';
import type { CacheState } from './cache-state.js';
import type { EntryStore } from './entries.js';

/** What the handlers work with. */
export interface CacheServiceOptions {
  state: CacheState;
  entries: EntryStore;
  metrics: CacheMetrics;
  logger: Logger;
  /** The audit trail auth keeps; undefined: changes are only logged. */
  audit?: AuditLog;
  now?: () => number;
}

/** A call's metadata, for its actor and request id. */
type Call = Parameters<typeof actorOf>[0];

const TEAM_ID = /^team_[A-Za-z0-9]{16}$/;
const KEY_ID = /^key_[A-Za-z0-9_-]{1,64}$/;
const MODEL_ID = /^[A-Za-z0-9._:/@-]{1,128}$/;

/** What a purge covers, as the generations it moves; throws INVALID_ARGUMENT unless exactly one is named. */
function purgedGenerations(request: PurgeRequestOutput, state: CacheState): { kind: string; target: string; names: string[] } {
  const named = [request.team_id, request.key_id, request.model_id].filter(Boolean).length + (request.all ? 1 : 0);
  if (named !== 1) throw GatewayError.of('invalid_request', 'Name exactly one of `team_id`, `key_id`, `model_id` or `all` to purge.', { param: 'team_id' });
  if (request.all) return { kind: 'all', target: 'all', names: ['all'] };
  if (request.team_id) {
    if (!TEAM_ID.test(request.team_id)) throw GatewayError.of('invalid_request', '`team_id` is not a team id (`team_...`).', { param: 'team_id' });
    return { kind: 'team', target: request.team_id, names: state.teamScopes(request.team_id).map((scope) => `scope:${scope}`) };
  }
  if (request.key_id) {
    if (!KEY_ID.test(request.key_id)) throw GatewayError.of('invalid_request', '`key_id` is not a key id (`key_...`).', { param: 'key_id' });
    return { kind: 'key', target: request.key_id, names: [`scope:key:${request.key_id}`] };
  }
  const modelId = request.model_id ?? '';
  if (!MODEL_ID.test(modelId)) throw GatewayError.of('invalid_request', '`model_id` is not a catalog model id.', { param: 'model_id' });
  return { kind: 'model', target: modelId, names: [`model:${modelId}`] };
}

/** The handlers, and a way to end every open watch at shutdown. */
export function createCacheService(options: CacheServiceOptions): { handlers: CacheServiceHandlers; endWatches(): void } {
  const { state, entries, metrics, logger } = options;
  const watches = new WatchStreams<SettingsSnapshot>((count) => metrics.watchers.set(count));
  state.onChange(() => {
    const settings = state.settings();
    metrics.targets.set(settings.length);
    watches.push({ version: state.version, settings });
  });
  const notFound = (target: string) => GatewayError.of('not_found', `No cache settings for '${target.slice(0, 160)}'.`, { param: 'target' });

  /** A change applied: logged, and added to the audit trail (a failure to write it is logged, the change stays). */
  const recordChange = async (call: Call, action: string, target: string, before?: unknown, after?: unknown) => {
    const actor = actorOf(call) ?? UNKNOWN_ACTOR;
    const requestId = requestIdOf(call);
    logger.info({ target, action, actor: actor.subject, request_id: requestId }, 'cache changed');
    await options.audit
      ?.record({ actor, action, target_id: target, before, after, request_id: requestId })
      .catch((error: unknown) => logger.error({ target, action, err: { message: (error as Error).message } }, 'audit entry not written'));
  };

  return {
    handlers: {
      Lookup: unary(async (request) => {
        const entry = await entries
          .lookup({ scope: request.scope ?? '', key: request.key ?? '', modelId: request.model_id ?? '' })
          .catch((error: unknown) => {
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
        const result = await entries.store({ scope: request.scope, key: request.key, modelId: request.model_id ?? '' }, request.entry, ttl).catch((error: unknown) => {
          metrics.stores.inc({ result: 'error' });
          throw error;
        });
        metrics.stores.inc({ result });
        return result === 'stored' ? { stored: true } : { stored: false, reason: result };
      }, 'Store'),
      PutSettings: unary(async (request, call) => {
        const actor = actorOf(call) ?? UNKNOWN_ACTOR;
        const settings = validateSettings(request, actor.subject, (options.now ?? Date.now)());
        const before = await state.get(settings.target);
        await state.put(settings);
        await recordChange(call, 'cache.settings.put', settings.target, before, settings);
        return settings as CacheSettingsOutput;
      }, 'PutSettings'),
      GetSettings: unary(async (request) => {
        const target = request.target ?? '';
        const settings = TARGET_PATTERN.test(target) ? await state.get(target) : undefined;
        if (!settings) throw notFound(target);
        return settings;
      }, 'GetSettings'),
      ListSettings: unary(async () => ({ settings: state.settings() }), 'ListSettings'),
      DeleteSettings: unary(async (request, call) => {
        const target = request.target ?? '';
        const before = TARGET_PATTERN.test(target) ? await state.get(target) : undefined;
        if (!before || !(await state.delete(target))) throw notFound(target);
        await recordChange(call, 'cache.settings.delete', target, before);
        return {};
      }, 'DeleteSettings'),
      Purge: unary(async (request, call) => {
        const { kind, target, names } = purgedGenerations(request, state);
        await state.purge(names);
        metrics.purges.inc({ kind });
        await recordChange(call, 'cache.purge', target, undefined, { purged: names });
        return { purged: names };
      }, 'Purge'),
      // Before the first read there is nothing to push: the first change read sends it.
      WatchSettings: (call) => watches.add(call),
    },
    endWatches: () => watches.end(),
  };
}
