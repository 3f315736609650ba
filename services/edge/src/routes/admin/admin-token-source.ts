/**
 * Admin tokens kept by auth (`bra-...`, AdminAccessService.CheckAdminToken) as a principal source:
 * the principal is the token's id (never its secret) with the role auth stores. A positive answer
 * is cached for at most `cacheMs` (1 s), keyed by the secret's SHA-256: the rule is that a revoked
 * token stops working within a second on every edge, while a console that loads a page's five
 * calls asks auth once. A negative answer is never cached (a token just created works at once);
 * auth unreachable is an error (a 503), never a guess.
 */
import { createHash } from 'node:crypto';
import { callUnary, type CallOptions } from '@gateway/grpc';
import type { AdminAccessServiceClient, CheckAdminTokenRequest, CheckAdminTokenResponseOutput } from '@gateway/proto';
import type { AdminPrincipal, AdminRole, PrincipalSource } from './admin-principal.js';

/** What an admin token's secret starts with (an API key's is `br-`). */
export const ADMIN_TOKEN_PREFIX = 'bra-';

/** The longest a positive check is trusted without asking auth again. */
export const ADMIN_TOKEN_CACHE_MS = 1_000;

/** Secrets remembered at most; beyond it the oldest answer is forgotten first. */
const CACHE_SIZE = 10_000;

const ROLES: Readonly<Record<string, AdminRole>> = { ADMIN_ROLE_ADMIN: 'admin', ADMIN_ROLE_VIEWER: 'viewer' };

/** Options of {@link adminTokenSource}. */
export interface AdminTokenSourceOptions {
  /** The options of each CheckAdminToken call, for the request it checks. */
  callOptions: (requestId: string) => CallOptions;
  /** How long a positive answer is kept (ms); default ADMIN_TOKEN_CACHE_MS. */
  cacheMs?: number;
  /** The clock (Unix ms). */
  now?: () => number;
}

/** The source that knows the live admin tokens auth keeps. */
export function adminTokenSource(client: AdminAccessServiceClient, options: AdminTokenSourceOptions): PrincipalSource {
  const cacheMs = options.cacheMs ?? ADMIN_TOKEN_CACHE_MS;
  const now = options.now ?? Date.now;
  const cache = new Map<string, { principal: AdminPrincipal; expiresAt: number }>();
  return async (credential, request) => {
    if (!credential.startsWith(ADMIN_TOKEN_PREFIX)) return undefined;
    const hash = createHash('sha256').update(credential).digest('hex');
    const cached = cache.get(hash);
    if (cached && cached.expiresAt > now()) return cached.principal;
    cache.delete(hash);
    const answer = await callUnary<CheckAdminTokenRequest, CheckAdminTokenResponseOutput>(
      client,
      client.CheckAdminToken,
      { secret: credential },
      options.callOptions(request.id),
    );
    const role = ROLES[answer.role ?? ''];
    if (!answer.valid || !role || !answer.token_id) return undefined;
    const principal: AdminPrincipal = Object.freeze({ subject: answer.token_id, role, via: 'admin_token' });
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
    cache.set(hash, { principal, expiresAt: now() + cacheMs });
    return principal;
  };
}
