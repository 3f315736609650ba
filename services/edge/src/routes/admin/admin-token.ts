/**
 * The static admin token (EDGE_ADMIN_TOKEN) as a principal source: the operator's bootstrap
 * credential, role `admin`. The comparison hashes both sides first, so it takes the same time
 * whatever the lengths, and the token itself is never logged or echoed.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AdminPrincipal, PrincipalSource } from './admin-principal.js';

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

const STATIC_PRINCIPAL: AdminPrincipal = Object.freeze({ subject: 'static-token', role: 'admin', via: 'static_token' });

/** The source that knows exactly `token`. */
export function staticTokenSource(token: string): PrincipalSource {
  const expected = sha256(token);
  return async (credential) => (timingSafeEqual(sha256(credential), expected) ? STATIC_PRINCIPAL : undefined);
}
