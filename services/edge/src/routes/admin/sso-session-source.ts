/**
 * The principal source of SSO sessions: it knows a session credential minted by console-sso.ts
 * (`brs-...`, via `sso_session`) with this edge's EDGE_SESSION_SECRET and not yet expired. A
 * session cannot be revoked one by one: it ends at its expiry (EDGE_SESSION_TTL_SECONDS), or all
 * of them when EDGE_SESSION_SECRET changes.
 */
import type { EdgeConfig } from '../../config.js';
import type { PrincipalSource } from './admin-principal.js';
import { readSessionToken, SESSION_TOKEN_PREFIX } from './sso-session-token.js';

/** The source of SSO sessions: none when SSO is off, so a `brs-` credential is then just unknown. */
export function ssoSessionSources(config: EdgeConfig): PrincipalSource[] {
  const secret = config.EDGE_SESSION_SECRET;
  if (!config.EDGE_OIDC_ISSUER || !secret) return [];
  return [
    async (credential) => {
      if (!credential.startsWith(SESSION_TOKEN_PREFIX)) return undefined;
      const session = readSessionToken(secret, credential);
      return session ? { subject: session.subject, role: session.role, via: 'sso_session' } : undefined;
    },
  ];
}
