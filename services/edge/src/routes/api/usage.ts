/**
 * GET /v1/usage: a key's own usage, read with that key, optionally by model (usage-query.ts
 * reads the query and groups metering's rows). The admin API's usage is admin/admin-usage.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { EdgeDependencies } from '../../dependencies.js';
import { bearerKey, checkKey, noteKeyChecked } from '../../auth/key-check.js';
import { KeyUsageQuerySchema, type UsagePage, type UsageQueryString } from '../admin/admin-api-schemas.js';
import { compileSchemaValidator, schemaRefusal } from '../admin/schema-validation.js';
import { queryUsage, readAliases, usagePage, usageQuery } from '../usage-query.js';

/** Registers GET /v1/usage: a key's own usage, read with that key. */
export function registerUsage(app: FastifyInstance, deps: EdgeDependencies): void {
  app.get<{ Querystring: UsageQueryString }>(
    '/v1/usage',
    {
      schema: { querystring: KeyUsageQuerySchema },
      validatorCompiler: compileSchemaValidator,
      schemaErrorFormatter: schemaRefusal,
      preValidation: readAliases,
    },
    async (request): Promise<UsagePage> => {
      // The key first: a caller without a valid key learns nothing from the query's errors (a
      // query refused by its schema waits for the key's check too: app.ts's error handler).
      noteKeyChecked(request);
      const decision = await checkKey(deps, bearerKey(request), request.id);
      const query = usageQuery(request.query);
      const keyId = decision.key_id ?? '';
      return usagePage(query, await queryUsage(deps, request, query, [keyId]), () => '');
    },
  );
}
