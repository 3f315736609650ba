/**
 * Single sign-on to the console and the admin API with an OpenID Connect provider (EDGE_OIDC_*):
 * the authorization code flow with PKCE (S256), `state` and `nonce`, through `openid-client` (the
 * certified relying party), which also checks the ID token: its signature against the provider's
 * JWKS, `iss`, `aud`, `exp` and the nonce.
 *
 * - `GET /console/sso/config`: whether SSO is on, for the console's login page; no credential.
 * - `GET /console/sso/login`: sends the browser to the provider. The flow's secrets (state, nonce,
 *   PKCE verifier, redirect URI) ride in a short-lived cookie signed with EDGE_SESSION_SECRET,
 *   HttpOnly and SameSite=Lax, scoped to /console/sso: any replica can finish the flow.
 * - `GET /console/sso/callback`: checks the answer, reads the roles claim, mints a session
 *   credential (`brs-...`, sso-session-token.ts) and hands it to the console in the URL's fragment
 *   (`/console/#sso=...`), which the browser never sends to a server and the console removes at
 *   once. No cookie carries admin power, so the admin API stays immune to cross-site request
 *   forgery: it reads bearer tokens only.
 *
 * A refusal is a small HTML page for a browser (with why, and a link back to the console) and the
 * OpenAI error envelope for anything else; causes go to the log, never the provider's tokens.
 */
import * as oidc from 'openid-client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EdgeConfig } from '../../config.js';
import { isLoopbackUrl } from '../../config.js';
import { edgeError } from '../../error-codes.js';
import { RequestError } from '../../errors.js';
import type { AdminRole } from './admin-principal.js';
import { CONSOLE_SECURITY_HEADERS } from './console.js';
import { mintSessionToken, signValue, verifyValue } from './sso-session-token.js';

/** The cookie of one sign-in flow, and how long a user has to finish it at the provider. */
const FLOW_COOKIE = 'gateway_sso_flow';
const FLOW_TTL_SECONDS = 600;
const CALLBACK_PATH = '/console/sso/callback';

/** Whether the edge's settings turn single sign-on on. */
export function ssoEnabled(config: EdgeConfig): boolean {
  return Boolean(config.EDGE_OIDC_ISSUER);
}

/** A comma-separated setting as its non-empty values. */
function listSetting(value: string): Set<string> {
  return new Set(
    value
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean),
  );
}

/**
 * The role the roles claim's value gives (a string, or an array of strings): admin if any value is
 * one of EDGE_OIDC_ADMIN_VALUES, else viewer if any is one of EDGE_OIDC_VIEWER_VALUES, else none.
 */
export function roleFromClaim(config: EdgeConfig, claim: unknown): AdminRole | undefined {
  const values = (Array.isArray(claim) ? claim : [claim]).filter((value): value is string => typeof value === 'string');
  const admins = listSetting(config.EDGE_OIDC_ADMIN_VALUES);
  const viewers = listSetting(config.EDGE_OIDC_VIEWER_VALUES);
  if (values.some((value) => admins.has(value))) return 'admin';
  if (values.some((value) => viewers.has(value))) return 'viewer';
  return undefined;
}

/** The provider's configuration, discovered once; a failed discovery is tried again by the next sign-in. */
function discoverer(config: EdgeConfig): () => Promise<oidc.Configuration> {
  let pending: Promise<oidc.Configuration> | undefined;
  const issuer = new URL(config.EDGE_OIDC_ISSUER);
  return () => {
    pending ??= oidc
      .discovery(issuer, config.EDGE_OIDC_CLIENT_ID, config.EDGE_OIDC_CLIENT_SECRET, undefined, {
        // Plain http only for a provider on this machine (the configuration refuses it elsewhere).
        execute: isLoopbackUrl(issuer) ? [oidc.allowInsecureRequests] : [],
        timeout: 10,
      })
      .then((discovered) => {
        // ID tokens from the token endpoint are checked against the JWKS too, not trusted for TLS alone.
        oidc.enableNonRepudiationChecks(discovered);
        return discovered;
      });
    pending.catch(() => {
      pending = undefined;
    });
    return pending;
  };
}

/** The value of one cookie of the request, or undefined. */
function cookieValue(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const separator = part.indexOf('=');
    if (separator > 0 && part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return undefined;
}

/** The Set-Cookie header of the flow cookie: `value` for `maxAge` seconds (0 deletes it). */
function flowCookie(value: string, maxAge: number, secure: boolean): string {
  return `${FLOW_COOKIE}=${value}; Path=/console/sso; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** The redirect URI of this request: the configured one, else this edge's own callback as the request names it. */
function redirectUri(config: EdgeConfig, request: FastifyRequest): string {
  return config.EDGE_OIDC_REDIRECT_URL || `${request.protocol}://${request.host}${CALLBACK_PATH}`;
}

/** What the flow cookie holds. */
interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  redirectUri: string;
}

/** The text of `text` safe inside HTML. */
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

/** Answers a refusal: a page for a browser, the error envelope (through the error handler) for anything else. */
function refuse(request: FastifyRequest, reply: FastifyReply, error: RequestError): FastifyReply {
  void reply.header('set-cookie', flowCookie('', 0, request.protocol === 'https'));
  if (!/text\/html/.test(request.headers.accept ?? '')) throw error;
  const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in refused · Gateway console</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/console/app.css"></head>
<body><main class="login"><section class="card" data-testid="sso-refusal" data-code="${escapeHtml(error.code ?? '')}">
<h1>Sign-in refused</h1><p>${escapeHtml(error.message)}</p><p><a href="/console">Back to the console</a></p></section></main></body></html>`;
  return reply.status(error.status).headers(CONSOLE_SECURITY_HEADERS).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(page);
}

/** Sends the browser to the provider's authorization endpoint, the flow's secrets in a signed cookie. */
async function startSignIn(config: EdgeConfig, provider: oidc.Configuration, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const flow: Flow = {
    state: oidc.randomState(),
    nonce: oidc.randomNonce(),
    verifier: oidc.randomPKCECodeVerifier(),
    redirectUri: redirectUri(config, request),
  };
  const scopes = new Set(['openid', ...config.EDGE_OIDC_SCOPES.split(/\s+/).filter(Boolean)]);
  const target = oidc.buildAuthorizationUrl(provider, {
    redirect_uri: flow.redirectUri,
    scope: [...scopes].join(' '),
    state: flow.state,
    nonce: flow.nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
    code_challenge_method: 'S256',
  });
  const cookie = signValue(config.EDGE_SESSION_SECRET, 'sso-flow', { ...flow, exp: Math.floor(Date.now() / 1000) + FLOW_TTL_SECONDS });
  void reply.headers(CONSOLE_SECURITY_HEADERS).header('cache-control', 'no-store');
  void reply.header('set-cookie', flowCookie(cookie, FLOW_TTL_SECONDS, flow.redirectUri.startsWith('https:')));
  return reply.redirect(target.href, 302);
}

/** The flow this callback finishes, from its signed cookie; refused when absent, expired or not this flow's. */
function flowOf(config: EdgeConfig, request: FastifyRequest): Flow {
  const cookie = cookieValue(request, FLOW_COOKIE);
  const payload = cookie ? verifyValue(config.EDGE_SESSION_SECRET, 'sso-flow', cookie) : undefined;
  if (!payload) throw edgeError('sso_flow_expired', 'The sign-in expired or was started in another browser: sign in again from the console.');
  const state = (request.query as Record<string, unknown>).state;
  if (typeof state !== 'string' || state !== payload.state) {
    throw edgeError('sso_state_mismatch', 'The answer of the identity provider does not belong to this sign-in: sign in again from the console.');
  }
  return payload as unknown as Flow;
}

/** An error of openid-client as the refusal the user sees; the cause is logged by the caller. */
function providerRefusal(error: unknown): RequestError {
  if (error instanceof RequestError) return error;
  if (error instanceof oidc.AuthorizationResponseError) {
    return edgeError('sso_provider_refused', `The identity provider did not sign you in (${error.error}).`);
  }
  if (error instanceof oidc.ResponseBodyError) return edgeError('sso_token_invalid', `The identity provider refused the sign-in (${error.error}).`);
  if (error instanceof oidc.ClientError && error.code !== 'OAUTH_TIMEOUT' && error.code !== undefined) {
    return edgeError('sso_token_invalid', "The identity provider's answer did not pass the checks (signature, issuer, audience, expiry, nonce).");
  }
  return edgeError('sso_provider_unreachable', 'The identity provider could not be reached. Please retry.');
}

/** Exchanges the code, checks the ID token and reads the user's role; refuses a user without one. */
async function finishSignIn(config: EdgeConfig, provider: oidc.Configuration, request: FastifyRequest, flow: Flow) {
  const answer = new URL(flow.redirectUri);
  answer.search = new URL(request.url, 'http://callback.invalid').search;
  const tokens = await oidc.authorizationCodeGrant(
    provider,
    answer,
    { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce, idTokenExpected: true },
    { redirect_uri: flow.redirectUri },
  );
  const claims = tokens.claims()!;
  let profile: Record<string, unknown> = claims;
  // Providers that keep the ID token small (scope claims in userinfo only, as OpenID Connect Core
  // 5.4 has it for the code flow) give the roles claim, and the email, on the userinfo endpoint.
  if (claims[config.EDGE_OIDC_ROLES_CLAIM] === undefined && provider.serverMetadata().userinfo_endpoint) {
    profile = { ...(await oidc.fetchUserInfo(provider, tokens.access_token, claims.sub)), ...claims };
  }
  const role = roleFromClaim(config, profile[config.EDGE_OIDC_ROLES_CLAIM]);
  if (!role) {
    throw edgeError(
      'sso_role_missing',
      `Your account is not allowed to use this gateway's console: its ${config.EDGE_OIDC_ROLES_CLAIM} claim names none of the gateway's roles. Ask an administrator for access.`,
    );
  }
  const name = [profile.email, profile.preferred_username, profile.name].find((value): value is string => typeof value === 'string' && value !== '');
  return mintSessionToken(config.EDGE_SESSION_SECRET, { subject: claims.sub, role, ...(name ? { name } : {}) }, config.EDGE_SESSION_TTL_SECONDS);
}

/** Registers the three SSO routes; /console/sso/config only (answering `enabled: false`) when SSO is off. */
export function registerConsoleSso(app: FastifyInstance, config: EdgeConfig): void {
  const enabled = ssoEnabled(config);
  app.get('/console/sso/config', async (_request, reply) => {
    void reply.headers(CONSOLE_SECURITY_HEADERS).header('cache-control', 'no-store');
    return enabled ? { enabled: true, login_url: '/console/sso/login' } : { enabled: false };
  });
  if (!enabled) return;
  const provider = discoverer(config);

  app.get('/console/sso/login', async (request, reply) => {
    let discovered: oidc.Configuration;
    try {
      discovered = await provider();
    } catch (error) {
      request.log.warn({ err: error }, 'OpenID Connect discovery failed');
      return refuse(request, reply, edgeError('sso_provider_unreachable', 'The identity provider could not be reached. Please retry.'));
    }
    return startSignIn(config, discovered, request, reply);
  });

  app.get(CALLBACK_PATH, async (request, reply) => {
    let session: { token: string; expiresAt: number };
    try {
      const flow = flowOf(config, request);
      session = await finishSignIn(config, await provider(), request, flow);
    } catch (error) {
      const refused = providerRefusal(error);
      request.log.info({ code: refused.code, cause: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }, 'sign-in refused');
      return refuse(request, reply, refused);
    }
    void reply
      .headers(CONSOLE_SECURITY_HEADERS)
      .header('cache-control', 'no-store')
      .header('set-cookie', flowCookie('', 0, request.protocol === 'https'));
    return reply.redirect(`/console/#sso=${session.token}`, 303);
  });
}
