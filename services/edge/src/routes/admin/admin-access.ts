/**
 * The admin API's access routes, in the admin scope (admin-scope.ts):
 *   GET    /admin/v1/me                who the caller is: subject, role, via; for an SSO session its user's name and end (the console hides what the role may not do)
 *   POST   /admin/v1/admin-tokens      create an admin token (role admin or viewer); its secret is in this answer only
 *   GET    /admin/v1/admin-tokens      list them, never a secret (role admin only)
 *   DELETE /admin/v1/admin-tokens/:id  revoke one for good
 *   GET    /admin/v1/audit             the audit trail of admin changes, newest first (viewers may read it)
 * Tokens and the trail are auth's (AdminAccessService); each change is recorded there with the
 * caller as its actor.
 */
import type { FastifyInstance } from 'fastify';
import { callUnary } from '@gateway/grpc';
import type {
  AdminRole,
  AdminTokenInfoOutput,
  AuditEntryOutput,
  CreateAdminTokenRequest,
  CreateAdminTokenResponseOutput,
  ListAdminTokensRequest,
  ListAdminTokensResponseOutput,
  ListAuditEntriesRequest,
  ListAuditEntriesResponseOutput,
  RevokeAdminTokenRequest,
} from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import {
  type AdminToken,
  type AdminTokenCreation,
  AdminTokenCreationSchema,
  type AuditEntry,
  type AuditPage,
  type AuditQuery,
  AuditQuerySchema,
  type CreatedAdminToken,
  type Principal,
} from './admin-api-schemas.js';
import { registerAdminResource } from './admin-resource.js';
import { absentBodyIsEmpty, registerAdminScope, requireAdminRole } from './admin-scope.js';
import { bearerCredential } from './admin-principal.js';
import { readSessionToken } from './sso-session-token.js';

const ROLES: Record<'admin' | 'viewer', AdminRole> = { admin: 'ADMIN_ROLE_ADMIN', viewer: 'ADMIN_ROLE_VIEWER' };
const ROLE_NAMES: Record<string, 'admin' | 'viewer'> = { ADMIN_ROLE_ADMIN: 'admin', ADMIN_ROLE_VIEWER: 'viewer' };

/** An AdminTokenInfo as the admin API's JSON. */
export function adminTokenJson(token: AdminTokenInfoOutput): AdminToken {
  return {
    object: 'admin_token',
    id: token.token_id ?? '',
    name: token.name ?? '',
    role: ROLE_NAMES[token.role ?? ''] ?? 'unknown',
    created_at: Math.floor((token.created_at_ms ?? 0) / 1000),
    revoked: token.revoked ?? false,
    created_by: token.created_by ?? '',
  };
}

/** Public facts as auth recorded them (JSON), or null for none (or text that is no JSON). */
function recordedFacts(json: string | undefined): unknown {
  if (!json) return null;
  try {
    return JSON.parse(json);
  } catch {
    return null;
  }
}

/** An AuditEntry as the admin API's JSON. */
export function auditEntryJson(entry: AuditEntryOutput): AuditEntry {
  return {
    object: 'audit_entry',
    id: entry.id ?? '',
    created_at_ms: entry.at_ms ?? 0,
    actor: { subject: entry.actor?.subject ?? '', role: entry.actor?.role ?? '', via: entry.actor?.via ?? '' },
    action: entry.action ?? '',
    target_id: entry.target_id ?? '',
    before: recordedFacts(entry.before_json),
    after: recordedFacts(entry.after_json),
    request_id: entry.request_id || null,
  };
}

/** Registers /admin/v1/me, /admin/v1/admin-tokens and /admin/v1/audit when the admin API exists. */
export function registerAdminAccess(app: FastifyInstance, deps: EdgeDependencies): void {
  const client = deps.adminAccess;
  registerAdminScope(app, deps, (admin, options) => {
    admin.get('/admin/v1/me', async (request): Promise<Principal> => {
      const { subject, role, via } = request.adminPrincipal!;
      const session = via === 'sso_session' ? readSessionToken(deps.config.EDGE_SESSION_SECRET, bearerCredential(request)!) : undefined;
      return { object: 'admin.principal', subject, role, via, name: session?.name ?? null, expires_at: session?.expiresAt ?? null };
    });

    admin.post<{ Body: AdminTokenCreation }>(
      '/admin/v1/admin-tokens',
      { schema: { body: AdminTokenCreationSchema }, preValidation: absentBodyIsEmpty },
      async (request, reply): Promise<CreatedAdminToken> => {
        const create: CreateAdminTokenRequest = { role: ROLES[request.body.role], name: request.body.name ?? '' };
        const created = await callUnary<CreateAdminTokenRequest, CreateAdminTokenResponseOutput>(client, client.CreateAdminToken, create, options(request));
        void reply.status(201);
        return { ...adminTokenJson(created.token!), secret: created.secret ?? '' };
      },
    );

    registerAdminResource(admin, options, {
      path: '/admin/v1/admin-tokens',
      param: 'id',
      json: adminTokenJson,
      listOptions: { preHandler: requireAdminRole },
      list: async (_request, call) => (await callUnary<ListAdminTokensRequest, ListAdminTokensResponseOutput>(client, client.ListAdminTokens, {}, call)).tokens,
      remove: async (id, call) => {
        const revoke: RevokeAdminTokenRequest = { token_id: id };
        return adminTokenJson(await callUnary<RevokeAdminTokenRequest, AdminTokenInfoOutput>(client, client.RevokeAdminToken, revoke, call));
      },
    });

    admin.get<{ Querystring: AuditQuery }>('/admin/v1/audit', { schema: { querystring: AuditQuerySchema } }, async (request): Promise<AuditPage> => {
      const { limit = '50', cursor = '', target_id: targetId = '', actor = '' } = request.query;
      const query: ListAuditEntriesRequest = { limit: Number(limit), cursor, target_id: targetId, actor_subject: actor };
      const page = await callUnary<ListAuditEntriesRequest, ListAuditEntriesResponseOutput>(client, client.ListAuditEntries, query, options(request));
      const next = page.next_cursor || null;
      return { object: 'list', data: page.entries.map(auditEntryJson), has_more: next !== null, next_cursor: next };
    });
  });
}
