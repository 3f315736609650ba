/**
 * Single sign-on on the real edge app (fastify's inject) against a provider on loopback whose
 * answers the test chooses (testing/fake-oidc-provider.ts): the redirect to the provider with
 * PKCE, state and nonce; a callback that mints a session the admin API accepts with the claim's
 * role; and each refusal a user would meet (an answer of another sign-in, an expired flow, a
 * wrong nonce or audience, a foreign signature, no role, the provider's own refusal), none of
 * which leaves a session behind.
 */
import type { FastifyInstance } from 'fastify';
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@gateway/config';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import { buildEdgeApp, type EdgeSurface } from '../../app.js';
import { readEdgeConfig } from '../../config.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { type FakeOidcProvider, startFakeOidcProvider } from '../../testing/fake-oidc-provider.js';

const SESSION_SECRET = 'session-secret-for-tests-0123456789abcdef';

let provider: FakeOidcProvider;
let app: FastifyInstance;

/** An edge app with SSO against the fake provider (and no static admin token). */
async function ssoApp(overrides: Record<string, string> = {}, surface: EdgeSurface = 'both'): Promise<FastifyInstance> {
  const config = readEdgeConfig({
    EDGE_OIDC_ISSUER: provider.issuer,
    EDGE_OIDC_CLIENT_ID: provider.clientId,
    EDGE_OIDC_CLIENT_SECRET: provider.clientSecret,
    EDGE_OIDC_ADMIN_VALUES: 'gateway-admin, ops',
    EDGE_OIDC_VIEWER_VALUES: 'gateway-viewer',
    EDGE_SESSION_SECRET: SESSION_SECRET,
    ...overrides,
  });
  const built = await buildEdgeApp(
    {
      config,
      logger: createLogger('edge', 'silent'),
      registry: new prometheus.Registry(),
      ready: async () => true,
    } as unknown as EdgeDependencies,
    { surface },
  );
  await built.ready();
  return built;
}

/** A sign-in started at the edge: the provider's authorization URL and the flow cookie. */
async function startSignIn(target: FastifyInstance = app) {
  const response = await target.inject({ method: 'GET', url: '/console/sso/login', headers: { host: 'gateway.test' } });
  expect(response.statusCode).toBe(302);
  const location = new URL(response.headers.location as string);
  const setCookie = String(response.headers['set-cookie']);
  return { location, setCookie, cookie: setCookie.split(';')[0]!, state: location.searchParams.get('state')!, nonce: location.searchParams.get('nonce')! };
}

/** Registers a code at the provider for `claims` and brings its answer back to the edge's callback. */
async function signIn(
  claims: Record<string, unknown>,
  options: { userinfo?: Record<string, unknown>; foreignKey?: boolean; accept?: string; state?: string } = {},
) {
  const flow = await startSignIn();
  const code = `code-${randomBytes(6).toString('hex')}`;
  provider.grants.set(code, {
    challenge: flow.location.searchParams.get('code_challenge')!,
    claims: { sub: 'user-1', nonce: flow.nonce, ...claims },
    ...(options.userinfo ? { userinfo: options.userinfo } : {}),
    ...(options.foreignKey ? { foreignKey: true } : {}),
  });
  const response = await app.inject({
    method: 'GET',
    url: `/console/sso/callback?code=${code}&state=${encodeURIComponent(options.state ?? flow.state)}`,
    headers: { host: 'gateway.test', cookie: flow.cookie, ...(options.accept ? { accept: options.accept } : {}) },
  });
  return { response, flow };
}

/** The session credential of a callback's redirect to the console, or undefined. */
function sessionOf(response: { headers: Record<string, unknown> }): string | undefined {
  return /^\/console\/#sso=(brs-\S+)$/.exec(String(response.headers.location ?? ''))?.[1];
}

const asCaller = (token: string) => ({ authorization: `Bearer ${token}` });

beforeAll(async () => {
  provider = await startFakeOidcProvider();
  app = await ssoApp();
});

afterAll(async () => {
  await app?.close();
  await provider?.close();
});

describe('single sign-on: the way to the provider', () => {
  it('tells the console that SSO is on, without a credential', async () => {
    const response = await app.inject({ method: 'GET', url: '/console/sso/config' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ enabled: true, login_url: '/console/sso/login' });
  });

  it("sends the browser to the provider's authorization endpoint with PKCE S256, state and nonce, the flow in an HttpOnly SameSite=Lax cookie", async () => {
    const { location, setCookie, state, nonce } = await startSignIn();
    expect(`${location.origin}${location.pathname}`).toBe(`${provider.issuer}/auth`);
    expect(location.searchParams.get('response_type')).toBe('code');
    expect(location.searchParams.get('client_id')).toBe(provider.clientId);
    expect(location.searchParams.get('redirect_uri')).toBe('http://gateway.test/console/sso/callback');
    expect(location.searchParams.get('scope')!.split(' ')).toContain('openid');
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(state.length).toBeGreaterThanOrEqual(32);
    expect(nonce.length).toBeGreaterThanOrEqual(32);
    expect(setCookie).toMatch(/^gateway_sso_flow=[^;]+; Path=\/console\/sso; Max-Age=600; HttpOnly; SameSite=Lax$/);
    // The verifier is not in the URL: only its hash is.
    expect(location.href).not.toContain(setCookie.split('=')[1]!.split('.')[0]!);
    const second = await startSignIn();
    expect(second.state).not.toBe(state);
    expect(second.nonce).not.toBe(nonce);
  });

  it('serves the sign-in on the admin listener only, never on the public one', async () => {
    const publicApp = await ssoApp({}, 'public');
    try {
      for (const url of ['/console/sso/config', '/console/sso/login', '/console/sso/callback?code=x&state=y', '/admin/v1/me']) {
        const response = await publicApp.inject({ method: 'GET', url });
        expect(response.statusCode, url).toBe(404);
        expect(response.json().error.code, url).toBe('unknown_url');
      }
    } finally {
      await publicApp.close();
    }
  });

  it('uses the configured redirect URL, marking the cookie Secure for https', async () => {
    const configured = await ssoApp({ EDGE_OIDC_REDIRECT_URL: 'https://console.example.com/console/sso/callback' });
    try {
      const { location, setCookie } = await startSignIn(configured);
      expect(location.searchParams.get('redirect_uri')).toBe('https://console.example.com/console/sso/callback');
      expect(setCookie).toMatch(/; Secure$/);
    } finally {
      await configured.close();
    }
  });
});

describe('single sign-on: the callback', () => {
  it('mints a session for an admin, handed over in the fragment, that the admin API takes; PKCE checked by the provider', async () => {
    const before = provider.tokenRequests.length;
    const { response, flow } = await signIn({ groups: ['staff', 'ops'], email: 'ada@example.com' });
    expect(response.statusCode).toBe(303);
    const token = sessionOf(response);
    expect(token).toBeDefined();
    expect(String(response.headers['set-cookie'])).toMatch(/^gateway_sso_flow=; Path=\/console\/sso; Max-Age=0/);
    const request = provider.tokenRequests.at(-1)!;
    expect(provider.tokenRequests.length).toBe(before + 1);
    expect(createHash('sha256').update(request.code_verifier!).digest('base64url')).toBe(flow.location.searchParams.get('code_challenge'));
    expect(request.redirect_uri).toBe('http://gateway.test/console/sso/callback');

    const session = await app.inject({ method: 'GET', url: '/admin/v1/me', headers: asCaller(token!) });
    expect(session.statusCode).toBe(200);
    expect(session.json()).toMatchObject({ subject: 'user-1', role: 'admin', via: 'sso_session', name: 'ada@example.com' });
    expect(session.json().expires_at).toBeGreaterThan(Date.now() / 1000 + 8 * 3600 - 60);
  });

  it('mints a viewer session that may read but gets a 403 on a change', async () => {
    const { response } = await signIn({ groups: 'gateway-viewer' });
    const token = sessionOf(response)!;
    expect((await app.inject({ method: 'GET', url: '/admin/v1/me', headers: asCaller(token) })).json()).toMatchObject({ role: 'viewer' });
    const change = await app.inject({ method: 'POST', url: '/admin/v1/keys', headers: asCaller(token), payload: { plan: 'pro' } });
    expect(change.statusCode).toBe(403);
    expect(change.json().error.code).toBe('admin_role_required');
  });

  it('reads the role from userinfo when the ID token does not carry the claim', async () => {
    const { response } = await signIn({}, { userinfo: { groups: ['gateway-viewer'] } });
    const token = sessionOf(response)!;
    expect((await app.inject({ method: 'GET', url: '/admin/v1/me', headers: asCaller(token) })).json()).toMatchObject({ role: 'viewer' });
  });

  it('refuses a user whose claim names no role of the gateway: a page for the browser, no session', async () => {
    const { response } = await signIn({ groups: ['staff'] }, { accept: 'text/html,application/xhtml+xml' });
    expect(response.statusCode).toBe(403);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.headers['content-security-policy']).toContain("default-src 'none'");
    expect(response.body).toContain('data-code="sso_role_missing"');
    expect(response.body).toContain('not allowed');
    expect(response.headers.location).toBeUndefined();
    expect(response.body).not.toContain('brs-');

    const json = await signIn({}, { userinfo: { email: 'grace@example.com' } });
    expect(json.response.statusCode).toBe(403);
    expect(json.response.json().error).toMatchObject({ code: 'sso_role_missing', type: 'permission_error' });
  });

  it('refuses an answer that belongs to another sign-in (state), before asking the provider', async () => {
    const before = provider.tokenRequests.length;
    const { response } = await signIn({ groups: ['gateway-admin'] }, { state: 'not-this-flows-state' });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('sso_state_mismatch');
    expect(provider.tokenRequests.length).toBe(before);
  });

  it('refuses a callback without the flow cookie, or with one changed or signed by another secret', async () => {
    const flow = await startSignIn();
    const callback = (cookie?: string) =>
      app.inject({ method: 'GET', url: `/console/sso/callback?code=x&state=${flow.state}`, headers: cookie ? { cookie } : {} });
    for (const cookie of [undefined, `${flow.cookie}x`, flow.cookie.replace(/=./, '=A')]) {
      const response = await callback(cookie);
      expect(response.statusCode, String(cookie)).toBe(400);
      expect(response.json().error.code).toBe('sso_flow_expired');
    }
    const other = await ssoApp({ EDGE_SESSION_SECRET: `${SESSION_SECRET}-other` });
    try {
      const response = await other.inject({ method: 'GET', url: `/console/sso/callback?code=x&state=${flow.state}`, headers: { cookie: flow.cookie } });
      expect(response.json().error.code).toBe('sso_flow_expired');
    } finally {
      await other.close();
    }
  });

  it('refuses an ID token with a wrong nonce, a wrong audience, a foreign signature, or expired', async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, Record<string, unknown>, { foreignKey?: boolean }]> = [
      ['nonce', { nonce: 'another-sign-ins-nonce' }, {}],
      ['audience', { aud: 'another-client' }, {}],
      ['issuer', { iss: 'https://impostor.example.com' }, {}],
      ['signature', {}, { foreignKey: true }],
      ['expiry', { iat: now - 3600, exp: now - 600 }, {}],
    ];
    for (const [what, claims, options] of cases) {
      const { response } = await signIn({ groups: ['gateway-admin'], ...claims }, options);
      expect(response.statusCode, what).toBe(401);
      expect(response.json().error, what).toMatchObject({ code: 'sso_token_invalid', type: 'authentication_error' });
      expect(sessionOf(response), what).toBeUndefined();
    }
  });

  it("refuses a code the provider does not know, and passes on the provider's own refusal", async () => {
    const flow = await startSignIn();
    const unknown = await app.inject({
      method: 'GET',
      url: `/console/sso/callback?code=never-issued&state=${flow.state}`,
      headers: { cookie: flow.cookie },
    });
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json().error.code).toBe('sso_token_invalid');

    const again = await startSignIn();
    const denied = await app.inject({
      method: 'GET',
      url: `/console/sso/callback?error=access_denied&state=${again.state}`,
      headers: { cookie: again.cookie },
    });
    expect(denied.statusCode).toBe(401);
    expect(denied.json().error.code).toBe('sso_provider_refused');
    expect(denied.json().error.message).toContain('access_denied');
  });

  it('refuses a session credential that was changed, and one from an edge without SSO', async () => {
    const { response } = await signIn({ groups: ['gateway-viewer'] });
    const token = sessionOf(response)!;
    const [payload, signature] = token.slice(4).split('.');
    const raised = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), role: 'admin' })).toString('base64url');
    const forged = await app.inject({ method: 'GET', url: '/admin/v1/me', headers: asCaller(`brs-${raised}.${signature}`) });
    expect(forged.statusCode).toBe(401);
    expect(forged.json().error.code).toBe('invalid_admin_token');

    const withoutSso = await buildEdgeApp({
      config: readEdgeConfig({ EDGE_ADMIN_TOKEN: 'a'.repeat(40), EDGE_SESSION_SECRET: SESSION_SECRET }),
      logger: createLogger('edge', 'silent'),
      registry: new prometheus.Registry(),
      ready: async () => true,
    } as unknown as EdgeDependencies);
    try {
      expect((await withoutSso.inject({ method: 'GET', url: '/admin/v1/me', headers: asCaller(token) })).statusCode).toBe(401);
      expect((await withoutSso.inject({ method: 'GET', url: '/console/sso/config' })).json()).toEqual({ enabled: false });
      expect((await withoutSso.inject({ method: 'GET', url: '/console/sso/login' })).statusCode).toBe(404);
    } finally {
      await withoutSso.close();
    }
  });
});

describe('single sign-on: configuration', () => {
  /** An issuer with its client, secret and session secret. */
  const base = {
    EDGE_OIDC_ISSUER: 'https://login.example.com',
    EDGE_OIDC_CLIENT_ID: 'gw',
    EDGE_OIDC_CLIENT_SECRET: 's',
    EDGE_SESSION_SECRET: SESSION_SECRET,
  };
  /** [what a configuration changes of base, the refusal that names the variable] */
  const REFUSED: Array<[Record<string, string>, string | RegExp]> = [
    [{ EDGE_SESSION_SECRET: '' }, 'invalid configuration: EDGE_SESSION_SECRET is required with EDGE_OIDC_ISSUER'],
    [{ EDGE_OIDC_CLIENT_ID: '' }, 'invalid configuration: EDGE_OIDC_CLIENT_ID is required with EDGE_OIDC_ISSUER'],
    [{ EDGE_OIDC_CLIENT_SECRET: '' }, 'invalid configuration: EDGE_OIDC_CLIENT_SECRET is required with EDGE_OIDC_ISSUER'],
    [{ EDGE_SESSION_SECRET: 'short' }, /EDGE_SESSION_SECRET/],
    [{ EDGE_OIDC_ISSUER: 'http://login.example.com' }, 'invalid configuration: EDGE_OIDC_ISSUER must be https (http only on loopback)'],
    [
      { EDGE_OIDC_REDIRECT_URL: 'https://gw.example.com/elsewhere' },
      'invalid configuration: EDGE_OIDC_REDIRECT_URL must be an http(s) URL ending in /console/sso/callback',
    ],
  ];

  it('refuses an issuer without its client, secret or session secret, naming the variable', () => {
    expect(readEdgeConfig(base).EDGE_SESSION_TTL_SECONDS).toBe(28_800);
    for (const [change, refusal] of REFUSED) expect(() => readEdgeConfig({ ...base, ...change })).toThrow(refusal);
    expect(() => readEdgeConfig({ ...base, EDGE_OIDC_ISSUER: 'http://127.0.0.1:9000' })).not.toThrow();
    expect(() => readEdgeConfig({ ...base, EDGE_SESSION_SECRET: '' })).toThrow(ConfigError);
  });
});
