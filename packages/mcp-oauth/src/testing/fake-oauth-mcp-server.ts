/**
 * An OAuth 2.1 authorization server and an MCP server it protects, both on loopback, for tests of
 * per-user upstream credentials. They speak the real wire:
 *   - the authorization server (node:http): RFC 8414 metadata, dynamic client registration
 *     (RFC 7591), /authorize (S256 only; the test picks the signed-in user with `user=`, or a refusal
 *     with `deny=1`) redirecting with a code, /token (authorization_code with PKCE verified, the
 *     client authenticated by Basic or in the body, refresh_token with rotation) and /revoke
 *     (RFC 7009);
 *   - the MCP server (the MCP SDK's McpServer over its Streamable HTTP transport): RFC 9728
 *     protected-resource metadata, 401 with `WWW-Authenticate: Bearer resource_metadata=...` for a
 *     missing or unknown token, and a `whoami` tool answering the token's user. Every call it
 *     serves is recorded with the token and user it was made with.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { authorizationServerMetadata } from '@gateway/testing';

/** A client the authorization server registered. */
export interface FakeOAuthClient {
  clientId: string;
  clientSecret?: string;
  redirectUris: string[];
}

/** An authorization request the server received (what the gateway sent the user to). */
export interface FakeAuthorizationRequest {
  clientId: string;
  state: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  scope: string | null;
  resource: string | null;
}

/** A call the MCP server served. */
export interface FakeMcpCall {
  user: string;
  token: string;
  tool: string;
}

/** The running pair. */
export interface FakeOAuthMcpServer {
  /** The authorization server's issuer (its base URL). */
  issuer: string;
  /** The protected MCP server's URL (`.../mcp`). */
  mcpUrl: string;
  /** Clients registered, by id; a test may add one registered by hand. */
  clients: Map<string, FakeOAuthClient>;
  /** How many clients registered themselves. */
  registrations(): number;
  authorizationRequests: FakeAuthorizationRequest[];
  /** Token requests, as their grant type (no secrets). */
  tokenRequests: string[];
  /** How many refresh_token grants succeeded. */
  refreshes(): number;
  /** Tokens revoked through /revoke. */
  revoked: string[];
  /** Tool calls the MCP server served, in order. */
  calls: FakeMcpCall[];
  /** The user of an active access token, or undefined. */
  userOf(accessToken: string): string | undefined;
  /** Ends every grant of a user at the server (as a user removing the app would): its tokens stop working and refresh fails. */
  endGrantsOf(user: string): void;
  /** Ends a user's access tokens before their expiry (as a server revoking sessions does); their refresh tokens still work. */
  endAccessTokensOf(user: string): void;
  /** Lifetime of the access tokens issued next, in seconds. */
  accessTokenSeconds: number;
  /** Delay of each refresh_token answer, so that concurrent refreshes would overlap. */
  refreshDelayMs: number;
  /** While set, refresh_token answers wait for it (after the presented token is spent): a refresh held on its way. */
  refreshGate?: Promise<void>;
  /** The status /token answers with instead of working, until cleared (a failing server). */
  tokenFailureStatus?: number;
  close(): Promise<void>;
}

interface Grant {
  user: string;
  clientId: string;
  scope: string;
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The authorization server's endpoints (paths below its issuer) and what it supports, as its metadata names them. */
const ENDPOINTS = { authorization_endpoint: '/authorize', token_endpoint: '/token', registration_endpoint: '/register', revocation_endpoint: '/revoke' };
const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'];
const SUPPORTED = {
  grant_types: ['authorization_code', 'refresh_token'],
  token_endpoint_auth_methods: CLIENT_AUTH_METHODS,
  revocation_endpoint_auth_methods: CLIENT_AUTH_METHODS,
  scopes: ['tools'],
};

function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }).end(JSON.stringify(body));
}

function token(): string {
  return randomBytes(24).toString('base64url');
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** Starts the authorization server and the MCP server on free loopback ports. */
export async function startFakeOAuthMcpServer(): Promise<FakeOAuthMcpServer> {
  const clients = new Map<string, FakeOAuthClient>();
  const codes = new Map<string, Grant & { redirectUri: string; challenge: string; resource: string | null }>();
  const accessTokens = new Map<string, Grant & { refreshToken?: string }>();
  const refreshTokens = new Map<string, Grant & { accessToken: string }>();
  let registered = 0;
  let refreshed = 0;

  const authorizationServer = createServer();
  const mcpServer = createServer();
  const issuer = await listen(authorizationServer);
  const mcpBase = await listen(mcpServer);

  const fake: FakeOAuthMcpServer = {
    issuer,
    mcpUrl: `${mcpBase}/mcp`,
    clients,
    registrations: () => registered,
    authorizationRequests: [],
    tokenRequests: [],
    refreshes: () => refreshed,
    revoked: [],
    calls: [],
    userOf: (accessToken) => accessTokens.get(accessToken)?.user,
    endGrantsOf(user) {
      for (const [value, grant] of accessTokens) if (grant.user === user) accessTokens.delete(value);
      for (const [value, grant] of refreshTokens) if (grant.user === user) refreshTokens.delete(value);
    },
    endAccessTokensOf(user) {
      for (const [value, grant] of accessTokens) if (grant.user === user) accessTokens.delete(value);
    },
    accessTokenSeconds: 3_600,
    refreshDelayMs: 0,
    close: async () => {
      await Promise.all([close(authorizationServer), close(mcpServer)]);
    },
  };

  const issue = (grant: Grant) => {
    const accessToken = token();
    const refreshToken = token();
    accessTokens.set(accessToken, { ...grant, refreshToken });
    refreshTokens.set(refreshToken, { ...grant, accessToken });
    return { access_token: accessToken, token_type: 'Bearer', expires_in: fake.accessTokenSeconds, refresh_token: refreshToken, scope: grant.scope };
  };

  /** The client a token or revocation request authenticates as (Basic, or client_id/client_secret in the body). */
  const authenticate = (request: IncomingMessage, form: URLSearchParams): FakeOAuthClient | undefined => {
    const header = request.headers.authorization;
    let clientId = form.get('client_id') ?? undefined;
    let secret = form.get('client_secret') ?? undefined;
    if (header?.startsWith('Basic ')) {
      const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      clientId = decoded.slice(0, colon);
      secret = decoded.slice(colon + 1);
    }
    const client = clientId ? clients.get(clientId) : undefined;
    if (!client) return undefined;
    if (client.clientSecret !== undefined && client.clientSecret !== secret) return undefined;
    return client;
  };

  authorizationServer.on('request', async (request, response) => {
    const url = new URL(request.url ?? '/', issuer);
    try {
      if (request.method === 'GET' && url.pathname === '/.well-known/oauth-authorization-server') {
        return json(response, 200, authorizationServerMetadata(issuer, ENDPOINTS, SUPPORTED));
      }
      if (request.method === 'POST' && url.pathname === '/register') {
        const metadata = JSON.parse(await bodyOf(request)) as { redirect_uris?: string[]; token_endpoint_auth_method?: string };
        if (!Array.isArray(metadata.redirect_uris) || metadata.redirect_uris.length === 0) {
          return json(response, 400, { error: 'invalid_redirect_uri' });
        }
        const method = metadata.token_endpoint_auth_method ?? 'client_secret_basic';
        const client: FakeOAuthClient = {
          clientId: `client-${token()}`,
          ...(method === 'none' ? {} : { clientSecret: token() }),
          redirectUris: metadata.redirect_uris,
        };
        clients.set(client.clientId, client);
        registered += 1;
        return json(response, 201, {
          ...metadata,
          client_id: client.clientId,
          ...(client.clientSecret ? { client_secret: client.clientSecret } : {}),
          client_id_issued_at: Math.floor(Date.now() / 1000),
          token_endpoint_auth_method: method,
        });
      }
      if (request.method === 'GET' && url.pathname === '/authorize') {
        const query = url.searchParams;
        const client = clients.get(query.get('client_id') ?? '');
        const redirectUri = query.get('redirect_uri') ?? '';
        fake.authorizationRequests.push({
          clientId: query.get('client_id') ?? '',
          state: query.get('state'),
          codeChallenge: query.get('code_challenge'),
          codeChallengeMethod: query.get('code_challenge_method'),
          scope: query.get('scope'),
          resource: query.get('resource'),
        });
        // Errors about the client or its redirect URI are shown, never redirected (RFC 6749 4.1.2.1).
        if (!client?.redirectUris.includes(redirectUri)) return json(response, 400, { error: 'invalid_request' });
        const back = new URL(redirectUri);
        const state = query.get('state');
        if (state) back.searchParams.set('state', state);
        if (query.get('deny') === '1') {
          back.searchParams.set('error', 'access_denied');
        } else if (query.get('response_type') !== 'code' || query.get('code_challenge_method') !== 'S256' || !query.get('code_challenge')) {
          back.searchParams.set('error', 'invalid_request');
        } else {
          const code = token();
          codes.set(code, {
            user: query.get('user') ?? 'anonymous',
            clientId: client.clientId,
            scope: query.get('scope') ?? '',
            redirectUri,
            challenge: query.get('code_challenge')!,
            resource: query.get('resource'),
          });
          back.searchParams.set('code', code);
        }
        response.writeHead(302, { location: back.toString() }).end();
        return;
      }
      if (request.method === 'POST' && url.pathname === '/token') {
        const form = new URLSearchParams(await bodyOf(request));
        const grantType = form.get('grant_type') ?? '';
        fake.tokenRequests.push(grantType);
        if (fake.tokenFailureStatus !== undefined) return json(response, fake.tokenFailureStatus, { error: 'temporarily_unavailable' });
        const client = authenticate(request, form);
        if (!client) return json(response, 401, { error: 'invalid_client' });
        if (grantType === 'authorization_code') {
          const code = codes.get(form.get('code') ?? '');
          codes.delete(form.get('code') ?? '');
          const verifier = form.get('code_verifier') ?? '';
          if (
            !code ||
            code.clientId !== client.clientId ||
            code.redirectUri !== form.get('redirect_uri') ||
            createHash('sha256').update(verifier).digest('base64url') !== code.challenge
          ) {
            return json(response, 400, { error: 'invalid_grant', error_description: 'the code, its client, redirect URI or PKCE verifier do not match' });
          }
          return json(response, 200, issue({ user: code.user, clientId: client.clientId, scope: code.scope }));
        }
        if (grantType === 'refresh_token') {
          const presented = form.get('refresh_token') ?? '';
          const grant = refreshTokens.get(presented);
          if (!grant || grant.clientId !== client.clientId) return json(response, 400, { error: 'invalid_grant' });
          // Rotation: the presented refresh token and its access token end here.
          refreshTokens.delete(presented);
          accessTokens.delete(grant.accessToken);
          if (fake.refreshDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, fake.refreshDelayMs));
          if (fake.refreshGate) await fake.refreshGate;
          refreshed += 1;
          return json(response, 200, issue({ user: grant.user, clientId: grant.clientId, scope: grant.scope }));
        }
        return json(response, 400, { error: 'unsupported_grant_type' });
      }
      if (request.method === 'POST' && url.pathname === '/revoke') {
        const form = new URLSearchParams(await bodyOf(request));
        if (!authenticate(request, form)) return json(response, 401, { error: 'invalid_client' });
        const value = form.get('token') ?? '';
        fake.revoked.push(value);
        const refresh = refreshTokens.get(value);
        if (refresh) {
          refreshTokens.delete(value);
          accessTokens.delete(refresh.accessToken);
        }
        accessTokens.delete(value);
        response.writeHead(200).end();
        return;
      }
      json(response, 404, { error: 'not_found' });
    } catch {
      json(response, 400, { error: 'invalid_request' });
    }
  });

  const resourceMetadataUrl = `${mcpBase}/.well-known/oauth-protected-resource/mcp`;
  mcpServer.on('request', async (request, response) => {
    const url = new URL(request.url ?? '/', mcpBase);
    if (
      request.method === 'GET' &&
      (url.pathname === '/.well-known/oauth-protected-resource/mcp' || url.pathname === '/.well-known/oauth-protected-resource')
    ) {
      return json(response, 200, { resource: fake.mcpUrl, authorization_servers: [issuer], scopes_supported: ['tools'], bearer_methods_supported: ['header'] });
    }
    if (url.pathname !== '/mcp') return json(response, 404, { error: 'not_found' });
    const presented = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const user = presented ? fake.userOf(presented) : undefined;
    if (!presented || !user) {
      return json(
        response,
        401,
        { error: 'invalid_token' },
        { 'www-authenticate': `Bearer error="invalid_token", resource_metadata="${resourceMetadataUrl}"` },
      );
    }
    const server = new McpServer({ name: 'fake-protected-mcp', version: '1.0.0' });
    server.registerTool('whoami', { description: 'The user whose token called' }, async () => {
      fake.calls.push({ user, token: presented, tool: 'whoami' });
      return { content: [{ type: 'text', text: user }] };
    });
    // Stateless: one server and transport per request, as the SDK's stateless example does.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request, response);
  });

  return fake;
}
