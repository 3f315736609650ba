/**
 * An OpenID Connect provider on loopback whose answers a test chooses, for the edge's unit tests
 * of the sign-in's refusals (a wrong nonce or audience, a foreign signature), which a real
 * provider never gives. It speaks the real wire: discovery, JWKS (an ES256 key), the token
 * endpoint (client_secret_post, PKCE S256 checked against the challenge the test registered with
 * the code) and userinfo. The end-to-end test uses a real provider (oidc-provider) instead.
 */
import { createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { authorizationServerMetadata } from '@gateway/testing';

/** What the token endpoint answers for one code. */
export interface FakeGrant {
  /** The authorization request's code_challenge (S256); the token request's verifier must match it. */
  challenge: string;
  /** The ID token's claims; iss, aud, iat and exp are filled in unless given. */
  claims: Record<string, unknown>;
  /** Claims of the userinfo endpoint for this grant's access token. */
  userinfo?: Record<string, unknown>;
  /** Sign the ID token with a key the JWKS does not hold. */
  foreignKey?: boolean;
}

/** A running fake provider. */
export interface FakeOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Codes the token endpoint accepts, each once. */
  grants: Map<string, FakeGrant>;
  /** Token requests received, as their form fields. */
  tokenRequests: Array<Record<string, string>>;
  close(): Promise<void>;
}

function newKey(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' });
}

/** A compact ES256 JWT of `claims`. */
function signJwt(claims: Record<string, unknown>, privateKey: KeyObject, kid: string): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${encode({ alg: 'ES256', typ: 'JWT', kid })}.${encode(claims)}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

async function formOf(request: IncomingMessage): Promise<Record<string, string>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
}

/** The provider's endpoints (paths below its issuer) and what it supports, as its discovery document names them. */
const ENDPOINTS = { authorization_endpoint: '/auth', token_endpoint: '/token', userinfo_endpoint: '/me', jwks_uri: '/jwks' };
const SUPPORTED = { subject_types: ['public'], id_token_signing_alg_values: ['ES256'], token_endpoint_auth_methods: ['client_secret_post'] };

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
}

/** Starts a fake provider on a free loopback port. */
export async function startFakeOidcProvider(clientId = 'gateway-console', clientSecret = 'fake-client-secret-0123456789'): Promise<FakeOidcProvider> {
  const key = newKey();
  const foreign = newKey();
  const kid = 'test-key';
  const grants = new Map<string, FakeGrant>();
  const tokenRequests: Array<Record<string, string>> = [];
  const userinfos = new Map<string, Record<string, unknown>>();
  let issuer = '';

  const token = async (request: IncomingMessage, response: ServerResponse) => {
    const form = await formOf(request);
    tokenRequests.push(form);
    if (form.client_id !== clientId || form.client_secret !== clientSecret) return json(response, 401, { error: 'invalid_client' });
    const grant = grants.get(form.code ?? '');
    grants.delete(form.code ?? '');
    const verified =
      grant &&
      createHash('sha256')
        .update(form.code_verifier ?? '')
        .digest('base64url') === grant.challenge;
    if (!grant || !verified) return json(response, 400, { error: 'invalid_grant' });
    const now = Math.floor(Date.now() / 1000);
    const claims: Record<string, unknown> = { iss: issuer, aud: clientId, iat: now, exp: now + 300, ...grant.claims };
    const accessToken = `at-${tokenRequests.length}`;
    if (grant.userinfo) userinfos.set(accessToken, { sub: claims.sub, ...grant.userinfo });
    const signer = grant.foreignKey ? foreign.privateKey : key.privateKey;
    return json(response, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: 300, id_token: signJwt(claims, signer, kid) });
  };

  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', issuer).pathname;
    if (path === '/.well-known/openid-configuration') {
      return json(response, 200, authorizationServerMetadata(issuer, ENDPOINTS, SUPPORTED));
    }
    if (path === '/jwks') return json(response, 200, { keys: [{ ...key.publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }] });
    if (path === '/token' && request.method === 'POST') return void token(request, response);
    if (path === '/me') {
      const claims = userinfos.get((request.headers.authorization ?? '').replace(/^Bearer /, ''));
      return claims ? json(response, 200, claims) : json(response, 401, { error: 'invalid_token' });
    }
    return json(response, 404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    clientId,
    clientSecret,
    grants,
    tokenRequests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
