/**
 * The scope every /admin route lives in: it exists only when EDGE_ADMIN_TOKEN is set or single
 * sign-on is on (otherwise every path is a plain 404), answers only requests whose credential a
 * principal source knows and whose role allows the method (admin-principal.ts), and checks bodies
 * and query strings against the admin API's schemas (schema-validation.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { CallOptions } from '@gateway/grpc';
import type { EdgeDependencies } from '../dependencies.js';
import { adminPrincipalHook, type PrincipalSource } from './admin-principal.js';
import { staticTokenSource } from './admin-token.js';
import { ssoEnabled } from './console-sso.js';
import { ssoSessionSources } from './sso-session-source.js';
import { compileSchemaValidator, schemaRefusal } from './schema-validation.js';

/** Registers `routes` in the admin scope, handing them the options of a call to a peer. */
export function registerAdminScope(
  app: FastifyInstance,
  deps: EdgeDependencies,
  routes: (admin: FastifyInstance, callOptions: (requestId: string) => CallOptions) => void,
): void {
  const token = deps.config.EDGE_ADMIN_TOKEN;
  if (!token && !ssoEnabled(deps.config)) return;
  void app.register(async (admin) => {
    const sources: PrincipalSource[] = token ? [staticTokenSource(token)] : [];
    sources.push(...ssoSessionSources(deps.config));
    admin.addHook('onRequest', adminPrincipalHook(sources));
    admin.setValidatorCompiler(compileSchemaValidator);
    admin.setSchemaErrorFormatter(schemaRefusal);
    routes(admin, (requestId) => ({ deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS, requestId }));
  });
}
