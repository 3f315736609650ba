/**
 * The gateway's own signed values, stateless so that every edge replica sharing EDGE_SESSION_SECRET
 * reads them: the SSO session credential (`brs-...`, a bearer token of the admin API) and the
 * sign-in flow's cookie. A value is `<base64url JSON payload>.<base64url HMAC-SHA256>`; the MAC
 * covers a purpose label too, so a flow cookie never passes for a session and the other way round.
 * Each payload carries its expiry (`exp`, Unix seconds), checked on every read.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ADMIN_ROLES, type AdminRole } from './admin-principal.js';

/** What a signed value is for; part of what its MAC covers. */
export type SignedPurpose = 'session' | 'sso-flow';

/** The prefix of an SSO session credential, as `br-` is an API key's. */
export const SESSION_TOKEN_PREFIX = 'brs-';

/** Seconds since the epoch, from a clock in milliseconds. */
const seconds = (nowMs: number) => Math.floor(nowMs / 1000);

function mac(secret: string, purpose: SignedPurpose, payload: string): Buffer {
  return createHmac('sha256', secret).update(`gateway-${purpose}-v1\n${payload}`).digest();
}

/** Signs `payload` (which must carry `exp`) for `purpose`. */
export function signValue(secret: string, purpose: SignedPurpose, payload: { exp: number }): string {
  const encoded = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${encoded}.${mac(secret, purpose, encoded).toString('base64url')}`;
}

/** The payload of a value this secret signed for `purpose` and that has not expired; else undefined. */
export function verifyValue(secret: string, purpose: SignedPurpose, value: string, nowMs: number = Date.now()): Record<string, unknown> | undefined {
  const dot = value.indexOf('.');
  if (dot <= 0 || value.length > 4096) return undefined;
  const encoded = value.slice(0, dot);
  // Compared as text: a signature in any other spelling (base64url's unused trailing bits) is refused.
  const given = Buffer.from(value.slice(dot + 1));
  const expected = Buffer.from(mac(secret, purpose, encoded).toString('base64url'));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof payload !== 'object' || payload === null) return undefined;
  const exp = (payload as { exp?: unknown }).exp;
  return typeof exp === 'number' && exp > seconds(nowMs) ? (payload as Record<string, unknown>) : undefined;
}

/** Who an SSO session is for. */
export interface SessionClaims {
  /** The provider's `sub`, prefixed by nothing: unique at that issuer. */
  subject: string;
  /** A name to show (email or preferred_username), when the provider gave one. */
  name?: string;
  role: AdminRole;
}

/** A session credential, and when it ends (Unix seconds). */
export interface MintedSession {
  token: string;
  expiresAt: number;
}

/** A session credential for `claims`, valid `ttlSeconds` from `nowMs`. */
export function mintSessionToken(secret: string, claims: SessionClaims, ttlSeconds: number, nowMs: number = Date.now()): MintedSession {
  const expiresAt = seconds(nowMs) + ttlSeconds;
  const payload = { sub: claims.subject, ...(claims.name ? { name: claims.name } : {}), role: claims.role, exp: expiresAt };
  return { token: `${SESSION_TOKEN_PREFIX}${signValue(secret, 'session', payload)}`, expiresAt };
}

/** The claims of a session credential that this secret minted and that has not expired; else undefined. */
export function readSessionToken(secret: string, token: string, nowMs: number = Date.now()): (SessionClaims & { expiresAt: number }) | undefined {
  if (!token.startsWith(SESSION_TOKEN_PREFIX)) return undefined;
  const payload = verifyValue(secret, 'session', token.slice(SESSION_TOKEN_PREFIX.length), nowMs);
  if (!payload) return undefined;
  const { sub, name, role, exp } = payload;
  if (typeof sub !== 'string' || !sub || !ADMIN_ROLES.includes(role as AdminRole)) return undefined;
  return { subject: sub, ...(typeof name === 'string' ? { name } : {}), role: role as AdminRole, expiresAt: exp as number };
}
