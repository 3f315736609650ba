/**
 * `GET /admin/v1/session`: who the caller of the admin API is and with which role, for any
 * credential the admin scope knows (the console hides what the role may not do). For an SSO
 * session, also the user's name and when the session ends.
 */
import type { FastifyInstance } from 'fastify';
import type { EdgeDependencies } from '../dependencies.js';
import type { AdminPrincipal } from './admin-principal.js';
import { bearerCredential } from './admin-principal.js';
import { registerAdminScope } from './admin-scope.js';
import { readSessionToken } from './sso-session-token.js';

/** The answer of GET /admin/v1/session. */
export interface AdminSession {
  subject: string;
  role: AdminPrincipal['role'];
  via: AdminPrincipal['via'];
  /** The SSO user's name (email), when the provider gave one. */
  name: string | null;
  /** When an SSO session ends (Unix seconds); null for credentials that do not expire. */
  expires_at: number | null;
}

/** Registers GET /admin/v1/session in the admin scope. */
export function registerAdminSession(app: FastifyInstance, deps: EdgeDependencies): void {
  registerAdminScope(app, deps, (admin) => {
    admin.get('/admin/v1/session', async (request): Promise<AdminSession> => {
      const principal = request.adminPrincipal!;
      const session = principal.via === 'sso_session' ? readSessionToken(deps.config.EDGE_SESSION_SECRET, bearerCredential(request)!) : undefined;
      return { subject: principal.subject, role: principal.role, via: principal.via, name: session?.name ?? null, expires_at: session?.expiresAt ?? null };
    });
  });
}
