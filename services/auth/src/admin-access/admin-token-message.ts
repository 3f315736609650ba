/**
 * The public facts of a stored admin token as its gateway.auth.v1 message, AdminTokenInfo (what
 * the AdminAccessService answers, the audit trail and the CLI record). Types only from @gateway/proto.
 */
import type { AdminRole, AdminTokenInfo } from '@gateway/proto';
import type { AdminRoleName } from './admin-roles.js';
import type { StoredAdminToken } from './admin-token-store.js';

/** Each admin role as its AdminRole value. */
export const ADMIN_ROLES: Record<AdminRoleName, AdminRole> = { admin: 'ADMIN_ROLE_ADMIN', viewer: 'ADMIN_ROLE_VIEWER' };

/** A stored token as the AdminTokenInfo message. */
export function toAdminTokenInfo(token: StoredAdminToken): AdminTokenInfo {
  return {
    token_id: token.token_id,
    name: token.name,
    role: ADMIN_ROLES[token.role],
    created_at_ms: token.created_at_ms,
    revoked: token.revoked,
    created_by: token.created_by,
  };
}
