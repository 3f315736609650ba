/**
 * Who is calling the admin API, and what their role lets them do. Every /admin request names a
 * credential (a bearer token); the admin scope asks each principal source in turn whom it
 * belongs to, the first that knows it wins. A source answers undefined for a credential it does
 * not know, and throws only when it cannot decide (a peer unreachable). Roles: `admin` may do
 * everything; `viewer` may read (GET and HEAD: usage, requests, keys without secrets) and gets a
 * 403 on every change.
 */
import type { FastifyRequest } from 'fastify';
import { RequestError } from '../../errors.js';

/** A role of the admin API and the console. */
export type AdminRole = 'admin' | 'viewer';

/** The admin API's roles, most powerful first. */
export const ADMIN_ROLES: readonly AdminRole[] = Object.freeze(['admin', 'viewer']);

/** Where a principal's credential came from. */
export type PrincipalVia = 'static_token' | 'admin_token' | 'sso_session';

/** The caller of an admin request, once its credential is known. */
export interface AdminPrincipal {
  /** Who: `static-token` for EDGE_ADMIN_TOKEN, an admin token's id, or an SSO user's subject. Never a secret. */
  subject: string;
  role: AdminRole;
  via: PrincipalVia;
}

/** Resolves a credential to its principal; undefined when the credential is not this source's. */
export type PrincipalSource = (credential: string, request: FastifyRequest) => Promise<AdminPrincipal | undefined>;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the admin scope's hook on every admin request it lets through. */
    adminPrincipal?: AdminPrincipal;
  }
}

/** Methods a viewer may use: the ones that change nothing. */
const READ_METHODS = new Set(['GET', 'HEAD']);

/** Whether `principal` may make a request with `method`. */
export function roleAllows(principal: AdminPrincipal, method: string): boolean {
  return principal.role === 'admin' || READ_METHODS.has(method.toUpperCase());
}

/** The bearer credential of a request, or undefined. */
export function bearerCredential(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header) : null;
  return match ? match[1] : undefined;
}

/**
 * An onRequest hook that lets through only requests whose credential one of `sources` knows and
 * whose principal's role allows the method: none or an unknown credential is a 401, a gateway API
 * key (`br-...`) a 403, a viewer's change a 403.
 */
export function adminPrincipalHook(sources: readonly PrincipalSource[]): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    const credential = bearerCredential(request);
    if (credential === undefined) {
      throw new RequestError(401, 'The admin API needs an admin token in an Authorization header (Bearer).', { code: 'missing_admin_token' });
    }
    if (credential.startsWith('br-')) throw new RequestError(403, 'An API key cannot use the admin API: use an admin token.', { code: 'admin_token_required' });
    for (const source of sources) {
      const principal = await source(credential, request);
      if (principal === undefined) continue;
      if (!roleAllows(principal, request.method)) {
        throw new RequestError(403, `The role '${principal.role}' may only read; this needs the role 'admin'.`, { code: 'admin_role_required' });
      }
      request.adminPrincipal = principal;
      return;
    }
    throw new RequestError(401, 'The admin token is not valid.', { code: 'invalid_admin_token' });
  };
}
