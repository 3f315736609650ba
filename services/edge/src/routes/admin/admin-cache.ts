/**
 * The admin API's response cache: /admin/v1/cache/settings to put, list, read and remove the
 * settings of a target (`global`, `model:<id>`, `team:<id>`, `key:<id>`; URL-encoded in a path),
 * and /admin/v1/cache/purge to make a team's, a key's, a model's or every entry unreachable at
 * once, in the admin scope (the viewer role reads, the admin role changes, each call carrying its
 * actor for the audit trail), each an RPC of the cache service, which keeps them in Redis and
 * pushes a change to every edge (WatchSettings).
 */
import type { FastifyInstance } from 'fastify';
import { callUnary } from '@gateway/grpc';
import type {
  CacheSettings,
  CacheSettingsOutput,
  DeleteSettingsRequest,
  DeleteSettingsResponseOutput,
  GetSettingsRequest,
  ListSettingsRequest,
  ListSettingsResponseOutput,
  PurgeRequest,
  PurgeResponseOutput,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { type CachePurge, CachePurgeSchema, type CacheSettingsJson, type CacheSettingsPut, CacheSettingsPutSchema } from './admin-api-schemas.js';
import { RequestError } from '../../request-error.js';
import { registerAdminResource } from './admin-resource.js';
import { absentBodyIsEmpty, registerAdminScope } from './admin-scope.js';

/** A target's settings as the admin API's JSON: only what it sets. */
export function adminCacheSettingsJson(settings: CacheSettingsOutput): CacheSettingsJson {
  return {
    object: 'cache.settings',
    target: settings.target ?? '',
    ...(settings.enabled !== undefined && settings.enabled !== null && { enabled: settings.enabled }),
    ...(settings.ttl_seconds !== undefined && settings.ttl_seconds !== null && { ttl_seconds: settings.ttl_seconds }),
    ...(settings.max_temperature !== undefined && settings.max_temperature !== null && { max_temperature: settings.max_temperature }),
    ...(settings.scope && { scope: settings.scope }),
    ...(settings.hit_cost_ratio !== undefined && settings.hit_cost_ratio !== null && { hit_cost_ratio: settings.hit_cost_ratio }),
    ...(settings.count_hit_tokens !== undefined && settings.count_hit_tokens !== null && { count_hit_tokens: settings.count_hit_tokens }),
    ...(settings.semantic_model !== undefined && settings.semantic_model !== null && { semantic_model: settings.semantic_model }),
    ...(settings.semantic_threshold !== undefined && settings.semantic_threshold !== null && { semantic_threshold: settings.semantic_threshold }),
    updated_by: settings.updated_by ?? '',
    updated_at: Math.floor((settings.updated_at_ms ?? 0) / 1000),
  };
}

/** Registers /admin/v1/cache when an admin credential and a cache service are configured. */
export function registerAdminCache(app: FastifyInstance, deps: EdgeDependencies): void {
  const cache = deps.cache;
  if (!cache) return;
  registerAdminScope(app, deps, (admin, options) => {
    admin.put<{ Params: { name: string }; Body: CacheSettingsPut }>(
      '/admin/v1/cache/settings/:name',
      { schema: { body: CacheSettingsPutSchema }, preValidation: absentBodyIsEmpty },
      async (request): Promise<CacheSettingsJson> => {
        const semanticModel = request.body.semantic_model;
        if (semanticModel && deps.catalog.get(semanticModel)?.kind !== 'MODEL_KIND_EMBEDDING')
          throw new RequestError(400, `'semantic_model' must be an embedding model of the catalog; '${semanticModel}' is not one.`, {
            param: 'semantic_model',
            code: 'invalid_value',
          });
        const put: CacheSettings = { target: request.params.name, ...request.body };
        return adminCacheSettingsJson(await callUnary<CacheSettings, CacheSettingsOutput>(cache, cache.PutSettings, put, options(request)));
      },
    );

    admin.post<{ Body: CachePurge }>('/admin/v1/cache/purge', { schema: { body: CachePurgeSchema } }, async (request) => {
      const { team_id, key_id, model, all } = request.body;
      const purge: PurgeRequest = { team_id: team_id ?? '', key_id: key_id ?? '', model_id: model ?? '', all: all === true };
      const purged = await callUnary<PurgeRequest, PurgeResponseOutput>(cache, cache.Purge, purge, options(request));
      return { object: 'cache.purge', purged: [...purged.purged] };
    });

    registerAdminResource(admin, options, {
      path: '/admin/v1/cache/settings',
      param: 'name',
      json: adminCacheSettingsJson,
      list: async (_request, call) => (await callUnary<ListSettingsRequest, ListSettingsResponseOutput>(cache, cache.ListSettings, {}, call)).settings,
      get: (target, call) => callUnary<GetSettingsRequest, CacheSettingsOutput>(cache, cache.GetSettings, { target }, call),
      remove: async (target, call) => {
        await callUnary<DeleteSettingsRequest, DeleteSettingsResponseOutput>(cache, cache.DeleteSettings, { target }, call);
        return { object: 'cache.settings.deleted', target, deleted: true };
      },
    });
  });
}
