/**
 * The SSO session credential and the sign-in flow's signed value: what a client holding one can
 * and cannot do with it (change it, keep it past its expiry, take it to an edge with another
 * secret, pass a flow value off as a session).
 */
import { describe, expect, it } from 'vitest';
import { mintSessionToken, readSessionToken, SESSION_TOKEN_PREFIX, signValue, verifyValue } from './sso-session-token.js';

const SECRET = 'session-secret-for-tests-0123456789abcdef';
const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);

/** The payload part of a session credential, decoded. */
function payloadOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.slice(SESSION_TOKEN_PREFIX.length).split('.')[0]!, 'base64url').toString('utf8'));
}

/** The credential with its payload replaced by `payload`, the signature kept. */
function withPayload(token: string, payload: Record<string, unknown>): string {
  const signature = token.split('.')[1]!;
  return `${SESSION_TOKEN_PREFIX}${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${signature}`;
}

describe('the SSO session credential', () => {
  it('carries the subject, name, role and expiry, and is read back until it expires', () => {
    const { token, expiresAt } = mintSessionToken(SECRET, { subject: 'user-1', name: 'ada@example.com', role: 'viewer' }, 3600, NOW);
    expect(token.startsWith('brs-')).toBe(true);
    expect(token).toMatch(/^\S+$/);
    expect(expiresAt).toBe(NOW / 1000 + 3600);
    expect(readSessionToken(SECRET, token, NOW)).toEqual({ subject: 'user-1', name: 'ada@example.com', role: 'viewer', expiresAt });
    expect(readSessionToken(SECRET, token, NOW + 3599_000)?.role).toBe('viewer');
    expect(readSessionToken(SECRET, token, NOW + 3600_000)).toBeUndefined();
    expect(readSessionToken(SECRET, token, NOW + 86_400_000)).toBeUndefined();
  });

  it('refuses a credential whose role, subject or expiry was changed', () => {
    const { token } = mintSessionToken(SECRET, { subject: 'user-1', role: 'viewer' }, 3600, NOW);
    const payload = payloadOf(token);
    expect(readSessionToken(SECRET, withPayload(token, { ...payload, role: 'admin' }), NOW)).toBeUndefined();
    expect(readSessionToken(SECRET, withPayload(token, { ...payload, sub: 'user-2' }), NOW)).toBeUndefined();
    expect(readSessionToken(SECRET, withPayload(token, { ...payload, exp: (payload.exp as number) + 86_400 }), NOW + 7200_000)).toBeUndefined();
  });

  it('refuses a changed or cut signature, and garbage', () => {
    const { token } = mintSessionToken(SECRET, { subject: 'user-1', role: 'admin' }, 3600, NOW);
    const signatureAt = token.indexOf('.') + 1;
    for (const at of [signatureAt, signatureAt + 10, token.length - 1]) {
      const changed = `${token.slice(0, at)}${token[at] === 'A' ? 'B' : 'A'}${token.slice(at + 1)}`;
      expect(readSessionToken(SECRET, changed, NOW), `character ${at}`).toBeUndefined();
    }
    expect(readSessionToken(SECRET, token.slice(0, -4), NOW)).toBeUndefined();
    expect(readSessionToken(SECRET, token.split('.')[0]!, NOW)).toBeUndefined();
    for (const garbage of ['brs-', 'brs-.', 'brs-a.b', `brs-${'x'.repeat(5000)}.y`, 'br-abc', token.slice(SESSION_TOKEN_PREFIX.length)]) {
      expect(readSessionToken(SECRET, garbage, NOW), garbage.slice(0, 20)).toBeUndefined();
    }
  });

  it('is worth nothing to an edge with another secret', () => {
    const { token } = mintSessionToken(SECRET, { subject: 'user-1', role: 'admin' }, 3600, NOW);
    expect(readSessionToken(`${SECRET}-other`, token, NOW)).toBeUndefined();
    expect(readSessionToken(SECRET.slice(0, -1), token, NOW)).toBeUndefined();
  });

  it('refuses a payload signed with the right secret but an unknown role or no subject', () => {
    const forged = (payload: Record<string, unknown>) => `${SESSION_TOKEN_PREFIX}${signValue(SECRET, 'session', payload as { exp: number })}`;
    const exp = NOW / 1000 + 60;
    expect(readSessionToken(SECRET, forged({ sub: 'user-1', role: 'owner', exp }), NOW)).toBeUndefined();
    expect(readSessionToken(SECRET, forged({ sub: '', role: 'admin', exp }), NOW)).toBeUndefined();
    expect(readSessionToken(SECRET, forged({ sub: 'user-1', role: 'admin' }), NOW)).toBeUndefined();
    expect(readSessionToken(SECRET, forged({ sub: 'user-1', role: 'admin', exp }), NOW)?.role).toBe('admin');
  });
});

describe('signed values', () => {
  it('are bound to their purpose: a sign-in flow value is no session and the other way round', () => {
    const flow = signValue(SECRET, 'sso-flow', { sub: 'user-1', role: 'admin', exp: NOW / 1000 + 60 } as { exp: number });
    expect(verifyValue(SECRET, 'sso-flow', flow, NOW)).toMatchObject({ sub: 'user-1' });
    expect(verifyValue(SECRET, 'session', flow, NOW)).toBeUndefined();
    expect(readSessionToken(SECRET, `${SESSION_TOKEN_PREFIX}${flow}`, NOW)).toBeUndefined();
    const { token } = mintSessionToken(SECRET, { subject: 'user-1', role: 'admin' }, 3600, NOW);
    expect(verifyValue(SECRET, 'sso-flow', token.slice(SESSION_TOKEN_PREFIX.length), NOW)).toBeUndefined();
  });
});
