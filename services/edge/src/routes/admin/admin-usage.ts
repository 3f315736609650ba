/**
 * The admin API's usage and model health, in the admin scope (an admin or a viewer):
 *   GET /admin/v1/usage    every key's usage (or one key's, or one team's), by any of key, model,
 *                          plan and team (usage-query.ts reads the query and groups the rows)
 *   GET /admin/v1/models   each model's health as the router reports it
 */
import type { FastifyInstance } from 'fastify';
import { callUnary } from '@gateway/grpc';
import type { ListKeysRequest, ListKeysResponseOutput } from '@gateway/proto';
import { tierName } from '../../catalog-view.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { queryUsage, readAliases, usagePage, usageQuery } from '../usage-query.js';
import { AdminUsageQuerySchema, type List, type ModelHealth, type UsagePage, type UsageQueryString } from './admin-api-schemas.js';
import { planName } from './admin-keys.js';
import { registerAdminScope } from './admin-scope.js';

/** Registers the admin API's usage and model health, when an admin credential is configured. */
export function registerAdminUsage(app: FastifyInstance, deps: EdgeDependencies): void {
  registerAdminScope(app, deps, (admin, options) => {
    admin.get<{ Querystring: UsageQueryString }>(
      '/admin/v1/usage',
      { schema: { querystring: AdminUsageQuerySchema }, preValidation: readAliases },
      async (request): Promise<UsagePage> => {
        const query = usageQuery(request.query);
        const [usage, plans] = await Promise.all([
          queryUsage(deps, request, query, query.keyId ? [query.keyId] : []),
          // A key's plan is its plan now: usage is grouped by the plans keys have today.
          query.groupBy.includes('plan')
            ? callUnary<ListKeysRequest, ListKeysResponseOutput>(deps.auth, deps.auth.ListKeys, {}, options(request)).then(
                (listed) => new Map(listed.keys.map((key) => [key.key_id ?? '', planName(key.plan)])),
              )
            : Promise.resolve(new Map<string, string>()),
        ]);
        return usagePage(query, usage, (keyId) => plans.get(keyId) ?? 'unknown');
      },
    );

    admin.get(
      '/admin/v1/models',
      async (): Promise<List<ModelHealth>> => ({
        object: 'list',
        data: deps.catalog.list().map((model) => ({
          id: model.id ?? '',
          provider: model.provider ?? '',
          available: model.available === true,
          retry_after_ms:
            model.available === false && model.retry_after_ms !== undefined && model.retry_after_ms !== null ? Number(model.retry_after_ms) : null,
          quality_tier: tierName(model.quality_tier),
        })),
      }),
    );
  });
}
