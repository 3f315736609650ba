/**
 * Per-key OAuth to an upstream MCP server, end to end: an OAuth-protected MCP server and its
 * authorization server (@gateway/mcp-oauth/testing) declared through the admin API with
 * `auth: oauth`; each gateway key's user signs in through the link its JSON-RPC error carries, the
 * authorization server sends the browser back to the edge's GET /mcp/oauth/callback, and from then
 * on that key's calls carry its own user's token, never another key's. DELETE /mcp/oauth/{server}
 * revokes it; a token the server stops accepting before its expiry is refreshed once.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type FakeOAuthMcpServer, startFakeOAuthMcpServer } from '@gateway/mcp-oauth/testing';
import { connectRedis, keysMatching, type RedisClient } from '@gateway/redis';
import { eventually } from '@gateway/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './cluster.js';
import { adminApi, mcpClients, toolNames } from './mcp-clients.js';

const ADMIN_TOKEN = 'mcp-oauth-e2e-admin-token-0123456789abcdef';
/** The text of the JSON-RPC error of a key without a token, with the link its user opens. */
const NEEDS_AUTHORIZATION = /The MCP server `linear` needs your authorization: open (\S+) and then retry/;

let cluster: Cluster;
let origin: string;
let upstream: FakeOAuthMcpServer;
let redis: RedisClient;
const clients = mcpClients();

const admin = adminApi(() => origin, ADMIN_TOKEN);

async function createKey(): Promise<string> {
  const response = await admin('POST', '/admin/v1/keys', { plan: 'pro' });
  expect(response.status).toBe(201);
  return ((await response.json()) as { secret: string }).secret;
}

function connect(secret: string): Promise<Client> {
  return clients.connect(origin, secret);
}

/** The pending authorizations (sign-ins started, not completed) in the MCP service's Redis. */
async function pendingAuthorizations(): Promise<number> {
  return (await keysMatching(redis, `${cluster.env.MCP_REDIS_PREFIX}oauth:state:*`)).length;
}

async function whoami(client: Client): Promise<string> {
  const result = (await client.callTool({ name: 'linear__whoami', arguments: {} })) as { content: { text: string }[]; isError?: boolean };
  expect(result.isError).toBeFalsy();
  return result.content[0]!.text;
}

/** The authorization URL of the JSON-RPC error a key without a token gets for a tools/call, or undefined for another answer. */
async function offeredAuthorization(client: Client): Promise<URL | undefined> {
  const failure = await client.callTool({ name: 'linear__whoami', arguments: {} }).then(
    () => '',
    (error: unknown) => (error instanceof Error ? error.message : String(error)),
  );
  const match = NEEDS_AUTHORIZATION.exec(failure);
  return match ? new URL(match[1]!) : undefined;
}

/** As offeredAuthorization, failing the test on any other answer. */
async function authorizationUrl(client: Client): Promise<URL> {
  const url = await offeredAuthorization(client);
  expect(url, 'a JSON-RPC error with an authorization URL').toBeDefined();
  return url!;
}

/** The first authorization URL, once the MCP service serves the server (MCP_RELOAD_INTERVAL_MS). */
function firstAuthorizationUrl(client: Client): Promise<URL> {
  return eventually(() => offeredAuthorization(client), 'the authorization error of the declared server', 20_000, 100);
}

/**
 * Signs in as `user` at the authorization server (the fake picks the user from `user=`) and
 * follows its redirect to the gateway's callback, as a browser does: the callback's answer.
 */
async function signIn(url: URL, user: string, accept = 'text/html'): Promise<{ location: URL; callback: Response }> {
  const signed = new URL(url);
  signed.searchParams.set('user', user);
  const redirect = await fetch(signed, { redirect: 'manual' });
  expect(redirect.status).toBe(302);
  const location = new URL(redirect.headers.get('location')!);
  return { location, callback: await fetch(location, { headers: { accept } }) };
}

beforeAll(async () => {
  upstream = await startFakeOAuthMcpServer();
  cluster = await startCluster({ mcp: true, mcpOAuth: true, env: { EDGE_ADMIN_TOKEN: ADMIN_TOKEN, MCP_RELOAD_INTERVAL_MS: '200' } });
  origin = new URL(cluster.baseUrl).origin;
  redis = await connectRedis(cluster.redisUrl);
  const put = await admin('PUT', '/admin/v1/mcp-servers/linear', { url: upstream.mcpUrl, auth: { type: 'oauth' } });
  expect(put.status, await put.text()).toBe(200);
}, 120_000);

afterAll(async () => {
  await clients.closeAll();
  await redis?.quit();
  await cluster?.stop();
  await upstream?.close();
});

describe('per-key OAuth to an upstream MCP server', () => {
  it("uses each key's own token, never another key's, and asks again after a revoke", async () => {
    const [secretA, secretB] = await Promise.all([createKey(), createKey()]);
    const [clientA, clientB] = await Promise.all([connect(secretA), connect(secretB)]);

    // Key A has no token: its tools/call is a JSON-RPC error with the link to sign in (once the
    // server is served: every replica reads the registry within MCP_RELOAD_INTERVAL_MS).
    const urlA = await firstAuthorizationUrl(clientA);
    expect(urlA.origin).toBe(upstream.issuer);
    expect(urlA.searchParams.get('redirect_uri')).toBe(`${origin}/mcp/oauth/callback`);
    expect(urlA.searchParams.get('code_challenge_method')).toBe('S256');
    expect(upstream.calls).toEqual([]);

    // A signs in as alice; the authorization server sends the browser back to the edge's callback.
    const { location, callback } = await signIn(urlA, 'alice');
    expect(location.origin + location.pathname).toBe(`${origin}/mcp/oauth/callback`);
    expect(callback.status).toBe(200);
    expect(callback.headers.get('content-type')).toMatch(/^text\/html/);
    expect(callback.headers.get('cache-control')).toBe('no-store');
    expect(await callback.text()).toContain('Authorized');

    expect(await whoami(clientA)).toBe('alice');
    expect(upstream.calls.at(-1)?.user).toBe('alice');

    expect(await toolNames(clientA)).toEqual(['linear__whoami']);

    // B is still asked to sign in: alice's token is never used for B, nothing reaches the server.
    const callsBefore = upstream.calls.length;
    const urlB = await authorizationUrl(clientB);
    expect(upstream.calls.length).toBe(callsBefore);
    expect(urlB.searchParams.get('state')).not.toBe(urlA.searchParams.get('state'));

    // B signs in as bob (a client without Accept: text/html gets JSON).
    const second = await signIn(urlB, 'bob', 'application/json');
    expect(second.callback.status).toBe(200);
    expect(await second.callback.json()).toEqual({ status: 'authorized', server: 'linear' });
    expect(await whoami(clientB)).toBe('bob');
    expect(upstream.calls.at(-1)?.user).toBe('bob');
    expect(await whoami(clientA)).toBe('alice');

    // The callback's state is spent: replaying A's redirect stores nothing and is a 400.
    const replay = await fetch(location);
    expect(replay.status).toBe(400);

    // A revokes its own token: gone here, revoked at the authorization server; A's next call asks
    // for authorization again, B's still works.
    const revokedBefore = upstream.revoked.length;
    const revoke = await fetch(`${origin}/mcp/oauth/linear`, { method: 'DELETE', headers: { authorization: `Bearer ${secretA}` } });
    expect(revoke.status).toBe(200);
    expect(await revoke.json()).toEqual({ object: 'mcp.authorization', server: 'linear', revoked: true });
    expect(upstream.revoked.length).toBeGreaterThan(revokedBefore);
    const again = await authorizationUrl(clientA);
    expect(again.origin).toBe(upstream.issuer);
    expect(await whoami(clientB)).toBe('bob');

    // Revoking again is harmless; without a gateway key it is a 401.
    const twice = await fetch(`${origin}/mcp/oauth/linear`, { method: 'DELETE', headers: { authorization: `Bearer ${secretA}` } });
    expect(await twice.json()).toMatchObject({ revoked: false });
    expect((await fetch(`${origin}/mcp/oauth/linear`, { method: 'DELETE' })).status).toBe(401);
  }, 120_000);

  it('lists a sign-in tool for a key without a token, and only a tools/call starts a sign-in', async () => {
    const client = await connect(await createKey());
    await firstAuthorizationUrl(client);
    const pending = await pendingAuthorizations();
    // Listing starts nothing (it is not counted against the key's limits): the sign-in tool stands
    // in for the server's tools, and calling it answers the link.
    for (let index = 0; index < 3; index++) expect(await toolNames(client)).toEqual(['linear__sign_in']);
    expect(await pendingAuthorizations()).toBe(pending);
    const url = await authorizationUrl(client);
    expect(await pendingAuthorizations()).toBe(pending + 1);
    expect((await signIn(url, 'erin')).callback.status).toBe(200);
    expect(await toolNames(client)).toEqual(['linear__whoami']);
    expect(await whoami(client)).toBe('erin');
  }, 120_000);

  it('refreshes once a token the server rejects before its expiry, and the call goes through', async () => {
    const secret = await createKey();
    const client = await connect(secret);
    const url = await firstAuthorizationUrl(client);
    expect((await signIn(url, 'carol')).callback.status).toBe(200);
    expect(await whoami(client)).toBe('carol');

    // The server stops accepting carol's access token (its refresh token still works).
    const refreshes = upstream.refreshes();
    upstream.endAccessTokensOf('carol');
    expect(await whoami(client)).toBe('carol');
    expect(upstream.refreshes()).toBe(refreshes + 1);
    expect(await whoami(client)).toBe('carol');
    expect(upstream.refreshes()).toBe(refreshes + 1);

    // With the grant ended too, the key is asked to sign in again.
    upstream.endGrantsOf('carol');
    expect((await authorizationUrl(client)).origin).toBe(upstream.issuer);
  }, 120_000);

  it('answers a callback with a bad, missing or refused state with a 4xx page, never a 500', async () => {
    const bad = await fetch(`${origin}/mcp/oauth/callback?code=abc&state=not-a-state`, { headers: { accept: 'text/html' } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await bad.text()).not.toContain('not-a-state');

    const json = await fetch(`${origin}/mcp/oauth/callback?code=abc&state=not-a-state`);
    expect(json.status).toBe(400);
    expect(((await json.json()) as { error: { code: string } }).error.code).toBe('invalid_state');

    expect((await fetch(`${origin}/mcp/oauth/callback`)).status).toBe(400);
    expect((await fetch(`${origin}/mcp/oauth/callback?state=&code=&error=`)).status).toBe(400);

    // A user who declines consent: the authorization server sends an error with a real state.
    const client = await connect(await createKey());
    const url = await firstAuthorizationUrl(client);
    url.searchParams.set('deny', '1');
    const declined = await signIn(url, 'dave', 'application/json');
    expect(declined.callback.status).toBe(403);
    expect(((await declined.callback.json()) as { error: { code: string } }).error.code).toBe('access_denied');
  }, 120_000);
});
