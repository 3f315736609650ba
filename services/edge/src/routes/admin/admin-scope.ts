/**
 * The scope every /admin route lives in: it exists only when the admin API has a credential to
 * accept (EDGE_ADMIN_TOKEN set, EDGE_ADMIN_TOKENS_ENABLED: admin tokens kept by auth, or single
 * sign-on on); otherwise every path is a plain 404. It answers only requests whose credential a
 * principal source knows and whose role allows the method (admin-principal.ts), and checks bodies
 * and query strings against the admin API's schemas (schema-validation.ts). Every call it makes to
 * a peer carries the principal as its actor (gRPC metadata `gateway-actor`), which auth records in
 * the audit trail of each change.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { CallOptions } from '@gateway/grpc';
import type { EdgeConfig } from '../../config.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { edgeError } from '../../error-codes.js';
import { adminPrincipalHook, type PrincipalSource } from './admin-principal.js';
import { staticTokenSource } from './admin-token.js';
import { ssoEnabled } from './console-sso.js';
import { ssoSessionSources } from './sso-session-source.js';
import { adminTokenSource } from './admin-token-source.js';
import { compileSchemaValidator, schemaRefusal } from './schema-validation.js';

/** The options of a call an admin route makes on behalf of its request. */
export type AdminCallOptions = (request: FastifyRequest) => CallOptions;

/** Whether the admin API (and the console) exist: some credential can open them. */
export function adminApiEnabled(config: EdgeConfig): boolean {
  return Boolean(config.EDGE_ADMIN_TOKEN) || config.EDGE_ADMIN_TOKENS_ENABLED || ssoEnabled(config);
}

/** The principal sources of an app, built once per set of dependencies (every scope shares the token cache). */
const sourcesOf = new WeakMap<EdgeDependencies, readonly PrincipalSource[]>();

function principalSources(deps: EdgeDependencies): readonly PrincipalSource[] {
  let sources = sourcesOf.get(deps);
  if (!sources) {
    const { EDGE_ADMIN_TOKEN: token, EDGE_ADMIN_TOKENS_ENABLED: tokensEnabled, EDGE_CONTROL_DEADLINE_MS: deadlineMs } = deps.config;
    sources = [
      ...(token ? [staticTokenSource(token)] : []),
      ...(tokensEnabled ? [adminTokenSource(deps.adminAccess, { callOptions: (requestId) => ({ deadlineMs, requestId }) })] : []),
      ...ssoSessionSources(deps.config),
    ];
    sourcesOf.set(deps, sources);
  }
  return sources;
}

/** A preHandler that lets only the role `admin` through, whatever the method (admin tokens: even listing them). */
export async function requireAdminRole(request: FastifyRequest): Promise<void> {
  if (request.adminPrincipal?.role !== 'admin') {
    throw edgeError('admin_role_required', `The role '${request.adminPrincipal?.role ?? 'none'}' may not use this; it needs the role 'admin'.`);
  }
}

/** Registers `routes` in the admin scope, handing them the options of a call to a peer on behalf of a request. */
export function registerAdminScope(
  app: FastifyInstance,
  deps: EdgeDependencies,
  routes: (admin: FastifyInstance, callOptions: AdminCallOptions) => void,
): void {
  if (!adminApiEnabled(deps.config)) return;
  void app.register(async (admin) => {
    admin.addHook('onRequest', adminPrincipalHook(principalSources(deps)));
    admin.setValidatorCompiler(compileSchemaValidator);
    admin.setSchemaErrorFormatter(schemaRefusal);
    routes(admin, (request) => ({
      deadlineMs: deps.config.EDGE_CONTROL_DEADLINE_MS,
      requestId: request.id,
      ...(request.adminPrincipal && { actor: { ...request.adminPrincipal } }),
    }));
  });
}

/** A create or update request's body left out (or sent as JSON null) is an empty object (then checked by the route's schema). */
export async function absentBodyIsEmpty(request: FastifyRequest): Promise<void> {
  request.body ??= {};
}
