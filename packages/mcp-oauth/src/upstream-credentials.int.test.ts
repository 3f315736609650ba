import { randomBytes, randomUUID } from 'node:crypto';
import { createLogger } from '@gateway/logger';
import { createRedis, deleteMatching, keysMatching, type RedisClient } from '@gateway/redis';
import { eventually, hasRedisServer, rejectedWith, type RedisCluster, redisUrl, startRedisCluster, startTcpProxy } from '@gateway/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { oauthCallbackResponse } from './callback-response.js';
import { upstreamCredentialKeys } from './keys.js';
import { type FakeOAuthMcpServer, startFakeOAuthMcpServer } from './testing/fake-oauth-mcp-server.js';
import { STATE_TTL_SECONDS, UpstreamCredentials, UpstreamOAuthError, type UpstreamOAuthServer } from './upstream-credentials.js';

// The whole flow against real Redis, a real (loopback) OAuth authorization server and an MCP server
// built with the MCP SDK that checks bearer tokens: two gateway keys, two users, never crossed.

const REDIRECT_URI = 'https://gateway.test/mcp/oauth/callback';
const logger = createLogger('mcp-oauth-test', 'silent');

let redis: RedisClient;
let upstream: FakeOAuthMcpServer;
let prefix: string;
let clock: number;
let server: UpstreamOAuthServer;

function credentials(options: { fetch?: typeof fetch } = {}): UpstreamCredentials {
  return new UpstreamCredentials({
    redis,
    prefix,
    encryptionKey: KEY,
    redirectUri: REDIRECT_URI,
    now: () => clock,
    ...options,
  });
}
const KEY = randomBytes(32);

/** The user signs in at the authorization server and consents (or declines): the callback's query it redirects to. */
async function consent(authorizationUrl: URL, user: string, options: { deny?: boolean } = {}): Promise<{ code?: string; state?: string; error?: string }> {
  const url = new URL(authorizationUrl);
  url.searchParams.set('user', user);
  if (options.deny) url.searchParams.set('deny', '1');
  const response = await fetch(url, { redirect: 'manual' });
  expect(response.status).toBe(302);
  const location = new URL(response.headers.get('location')!);
  expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
  return Object.fromEntries(location.searchParams) as { code?: string; state?: string; error?: string };
}

/** Authorizes `keyId` as `user` from start to callback. */
async function authorize(store: UpstreamCredentials, keyId: string, user: string): Promise<void> {
  const query = await consent(await store.authorizationUrl(keyId, server), user);
  expect(await store.complete(query)).toEqual({ keyId, serverId: server.id });
}

/** Calls the upstream's `whoami` tool with the MCP SDK's client and these headers: the user the server saw. */
async function whoami(headers: Record<string, string>): Promise<string> {
  const client = new Client({ name: 'gateway-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(upstream.mcpUrl), { requestInit: { headers } }));
  try {
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    return (result.content as Array<{ type: string; text: string }>)[0]!.text;
  } finally {
    await client.close();
  }
}

function tokenOf(headers: Record<string, string> | undefined): string {
  const match = /^Bearer (.+)$/.exec(headers?.Authorization ?? '');
  expect(match).not.toBeNull();
  return match![1]!;
}

const rejection = (promise: Promise<unknown>): Promise<UpstreamOAuthError> => rejectedWith(UpstreamOAuthError, promise);

beforeAll(async () => {
  redis = createRedis(await redisUrl(), logger);
  // The services' client queues nothing: wait until it is connected.
  await eventually(() => redis.status === 'ready', 'Redis ready', 10_000);
});

afterAll(async () => {
  await redis.quit();
});

beforeEach(async () => {
  prefix = `mcp-oauth-test:${randomUUID()}:`;
  clock = Date.now();
  upstream = await startFakeOAuthMcpServer();
  server = { id: 'docs', url: upstream.mcpUrl };
});

afterEach(async () => {
  await upstream.close();
  await deleteMatching(redis, `${prefix}*`);
});

describe('UpstreamCredentials', () => {
  it('gives each gateway key its own token, and the upstream sees each key call as its own user', async () => {
    const store = credentials();
    expect(await store.headersFor('key-a', server)).toBeUndefined();

    const startA = await store.authorizationUrl('key-a', server);
    const startB = await store.authorizationUrl('key-b', server);
    // Discovered from the MCP server's metadata, registered once (RFC 7591), PKCE S256, a state
    // that says nothing of the key, the resource indicator of the MCP server (RFC 8707).
    expect(`${startA.origin}${startA.pathname}`).toBe(`${upstream.issuer}/authorize`);
    expect(upstream.registrations()).toBe(1);
    for (const request of upstream.authorizationRequests.slice(-2)) {
      expect(request.codeChallengeMethod).toBe('S256');
      expect(request.state).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(request.state).not.toContain('key-');
      expect(request.resource).toBe(upstream.mcpUrl);
    }
    expect(startA.searchParams.get('state')).not.toBe(startB.searchParams.get('state'));

    // Completed in the other order than started, B's on another replica.
    expect(await credentials().complete(await consent(startB, 'bob'))).toEqual({ keyId: 'key-b', serverId: 'docs' });
    expect(await store.complete(await consent(startA, 'alice'))).toEqual({ keyId: 'key-a', serverId: 'docs' });

    const headersA = await store.headersFor('key-a', server);
    const headersB = await store.headersFor('key-b', server);
    expect(tokenOf(headersA)).not.toBe(tokenOf(headersB));
    expect(await whoami(headersA!)).toBe('alice');
    expect(await whoami(headersB!)).toBe('bob');
    expect(upstream.calls).toEqual([
      { user: 'alice', token: tokenOf(headersA), tool: 'whoami' },
      { user: 'bob', token: tokenOf(headersB), tool: 'whoami' },
    ]);

    // Listed with their expiry, never the token.
    const listed = await store.list('key-a');
    expect(listed).toEqual([{ serverId: 'docs', expiresAtMs: clock + 3_600_000 }]);
    expect(JSON.stringify(listed)).not.toContain(tokenOf(headersA));
    expect(await store.list('key-c')).toEqual([]);

    // Nothing in Redis holds a token or the client's secret in clear, and the tokens sit in the key id's slot.
    const names = await keysMatching(redis, `${prefix}*`);
    expect(names).toContain(`${prefix}tokens:{key-a}`);
    const secrets = [tokenOf(headersA), tokenOf(headersB), ...[...upstream.clients.values()].map((client) => client.clientSecret!)];
    for (const name of names) {
      const type = await redis.type(name);
      const values = type === 'hash' ? Object.values(await redis.hgetall(name)) : [(await redis.get(name)) ?? ''];
      for (const value of values) for (const secret of secrets) expect(value).not.toContain(secret);
    }
  });

  it('refuses a state for another flow, a replayed state, an unknown one, and keeps a state ten minutes at most', async () => {
    const store = credentials();
    const startA = await store.authorizationUrl('key-a', server);
    const startB = await store.authorizationUrl('key-b', server);
    const ttl = await redis.pttl(upstreamCredentialKeys(prefix).pendingAuthorization(startA.searchParams.get('state')!));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(STATE_TTL_SECONDS * 1000);

    const callbackA = await consent(startA, 'alice');
    const callbackB = await consent(startB, 'bob');
    // A's code with B's state: B's PKCE verifier does not match A's challenge; nothing is stored for either.
    const crossed = await rejection(store.complete({ code: callbackA.code!, state: callbackB.state! }));
    expect(crossed.reason).toBe('authorization_failed');
    expect(crossed.oauthError).toBe('invalid_grant');
    expect(crossed.message).not.toContain(callbackA.code!);
    expect(await store.list('key-a')).toEqual([]);
    expect(await store.list('key-b')).toEqual([]);
    // B's state was spent by that attempt.
    expect((await rejection(store.complete(callbackB))).reason).toBe('invalid_state');

    // A new code for A completes once; its replay is refused and changes nothing.
    const again = await consent(await store.authorizationUrl('key-a', server), 'alice');
    await store.complete(again);
    const before = await store.headersFor('key-a', server);
    expect((await rejection(store.complete(again))).reason).toBe('invalid_state');
    expect(await store.headersFor('key-a', server)).toEqual(before);
    expect(await store.list('key-b')).toEqual([]);

    expect((await rejection(store.complete({ code: 'x', state: 'never-issued' }))).reason).toBe('invalid_state');
    expect((await rejection(store.complete({ code: 'x' }))).reason).toBe('invalid_state');
  });

  it('does not open a token altered in Redis or moved to another key, and never presents one to another URL', async () => {
    const store = credentials();
    await authorize(store, 'key-a', 'alice');
    await authorize(store, 'key-b', 'bob');
    const keys = upstreamCredentialKeys(prefix);
    const blobA = (await redis.hget(keys.tokens('key-a'), 'docs'))!;

    // A's sealed token copied over B's: B gets no header (and certainly not A's token), lists nothing.
    await redis.hset(keys.tokens('key-b'), 'docs', blobA);
    expect(await store.headersFor('key-b', server)).toBeUndefined();
    expect(await store.list('key-b')).toEqual([]);
    // Moved to another server id of the same key: bound to the server too.
    await redis.hset(keys.tokens('key-a'), 'wiki', blobA);
    expect(await store.headersFor('key-a', { id: 'wiki', url: upstream.mcpUrl })).toBeUndefined();

    // One character in the middle of A's ciphertext changed (the last one may carry only padding bits).
    const middle = Math.floor(blobA.length / 2);
    const altered = `${blobA.slice(0, middle)}${blobA[middle] === 'A' ? 'B' : 'A'}${blobA.slice(middle + 1)}`;
    await redis.hset(keys.tokens('key-a'), 'docs', altered);
    expect(await store.headersFor('key-a', server)).toBeUndefined();
    await redis.hset(keys.tokens('key-a'), 'docs', blobA);
    expect(await whoami((await store.headersFor('key-a', server))!)).toBe('alice');

    // Sealed with another encryption key: does not open.
    const otherKey = new UpstreamCredentials({ redis, prefix, encryptionKey: randomBytes(32), redirectUri: REDIRECT_URI, now: () => clock });
    expect(await otherKey.headersFor('key-a', server)).toBeUndefined();

    // The operator points the server id at another URL: A's token is not sent there.
    expect(await store.headersFor('key-a', { id: 'docs', url: 'http://127.0.0.1:9/mcp' })).toBeUndefined();
  });

  it('refreshes an expired token once for 20 concurrent first uses on two replicas', async () => {
    const replicaOne = credentials();
    const replicaTwo = credentials();
    await authorize(replicaOne, 'key-a', 'alice');
    const old = tokenOf(await replicaOne.headersFor('key-a', server));
    upstream.refreshDelayMs = 200;
    clock += 3_600_000;

    const results = await Promise.all(Array.from({ length: 20 }, (_, index) => (index % 2 === 0 ? replicaOne : replicaTwo).headersFor('key-a', server)));
    expect(upstream.refreshes()).toBe(1);
    const fresh = new Set(results.map(tokenOf));
    expect(fresh.size).toBe(1);
    expect(fresh.has(old)).toBe(false);
    expect(await whoami(results[0]!)).toBe('alice');
    // The server rotated the old one away.
    expect(upstream.userOf(old)).toBeUndefined();
    expect((await replicaTwo.list('key-a'))[0]!.expiresAtMs).toBe(clock + 3_600_000);
  });

  it('refreshes a token about to expire, and leaves no token when the server refuses the refresh', async () => {
    const store = credentials();
    await authorize(store, 'key-a', 'alice');
    await authorize(store, 'key-b', 'bob');
    const before = tokenOf(await store.headersFor('key-a', server));
    clock += 3_600_000 - 10_000;
    expect(tokenOf(await store.headersFor('key-a', server))).not.toBe(before);
    expect(upstream.refreshes()).toBe(1);

    // Alice removes the gateway at the server: her refresh is refused, her token is gone, Bob's stays.
    upstream.endGrantsOf('alice');
    clock += 3_600_000;
    expect(await store.headersFor('key-a', server)).toBeUndefined();
    expect(await store.list('key-a')).toEqual([]);
    expect(await redis.hexists(upstreamCredentialKeys(prefix).tokens('key-a'), 'docs')).toBe(0);
    expect(await whoami((await store.headersFor('key-b', server))!)).toBe('bob');
  });

  it('replaces a token the server rejected before its expiry, once for concurrent callers', async () => {
    const store = credentials();
    await authorize(store, 'key-a', 'alice');
    const rejected = (await store.headersFor('key-a', server))!;
    upstream.endAccessTokensOf('alice');
    await expect(whoami(rejected)).rejects.toThrow();

    upstream.refreshDelayMs = 100;
    const replaced = await Promise.all(Array.from({ length: 5 }, () => store.headersAfterRejection('key-a', server, rejected)));
    expect(upstream.refreshes()).toBe(1);
    expect(new Set(replaced.map(tokenOf)).size).toBe(1);
    expect(tokenOf(replaced[0])).not.toBe(tokenOf(rejected));
    expect(await whoami(replaced[0]!)).toBe('alice');
    // A late caller holding the same rejected headers gets the replacement, with no new refresh.
    expect(await store.headersAfterRejection('key-a', server, rejected)).toEqual(replaced[0]);
    expect(upstream.refreshes()).toBe(1);
    expect(await store.headersFor('key-a', server)).toEqual(replaced[0]);
  });

  it('does not bring back a token revoked while its refresh was on the way', async () => {
    const store = credentials();
    await authorize(store, 'key-a', 'alice');
    clock += 3_600_000;
    let release = () => {};
    upstream.refreshGate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const refreshing = store.headersFor('key-a', server);
    await eventually(() => upstream.tokenRequests.includes('refresh_token'), 'the refresh to reach the authorization server', 10_000);
    await store.revoke('key-a', 'docs');
    release();
    expect(await refreshing).toBeUndefined();
    expect(await store.list('key-a')).toEqual([]);
    expect(await store.headersFor('key-a', server)).toBeUndefined();
    // What the refresh brought was revoked at the server too.
    expect(upstream.refreshes()).toBe(1);
    expect(upstream.revoked.length).toBeGreaterThanOrEqual(4);
  });

  it('keeps the token when the authorization server fails, and says so without the token', async () => {
    const store = credentials();
    await authorize(store, 'key-a', 'alice');
    const token = tokenOf(await store.headersFor('key-a', server));
    clock += 3_600_000;
    for (const status of [503, 429]) {
      upstream.tokenFailureStatus = status;
      const failure = await rejection(store.headersFor('key-a', server));
      expect(failure.reason).toBe('upstream_unavailable');
      expect(`${failure.message} ${failure.stack}`).not.toContain(token);
      expect(await store.list('key-a')).toHaveLength(1);
    }

    upstream.tokenFailureStatus = undefined;
    expect(await whoami((await store.headersFor('key-a', server))!)).toBe('alice');
  });

  it('revokes: the token leaves the gateway and the authorization server', async () => {
    const store = credentials();
    await authorize(store, 'key-a', 'alice');
    await authorize(store, 'key-b', 'bob');
    const token = tokenOf(await store.headersFor('key-a', server));

    await store.revoke('key-a', 'docs');
    expect(await store.headersFor('key-a', server)).toBeUndefined();
    expect(await store.list('key-a')).toEqual([]);
    expect(upstream.revoked).toContain(token);
    expect(upstream.userOf(token)).toBeUndefined();
    await expect(whoami({ Authorization: `Bearer ${token}` })).rejects.toThrow();
    // Revoking what is not there is a no-op; B is untouched.
    await store.revoke('key-a', 'docs');
    expect(await whoami((await store.headersFor('key-b', server))!)).toBe('bob');
  });

  it('uses a client the operator registered by hand instead of registering one', async () => {
    const store = credentials();
    upstream.clients.set('operator-client', { clientId: 'operator-client', clientSecret: 'operator-secret', redirectUris: [REDIRECT_URI] });
    const configured = { ...server, clientId: 'operator-client', clientSecret: 'operator-secret', scopes: ['tools'] };
    const start = await store.authorizationUrl('key-a', configured);
    expect(start.searchParams.get('client_id')).toBe('operator-client');
    expect(start.searchParams.get('scope')).toBe('tools');
    expect(upstream.registrations()).toBe(0);
    await store.complete(await consent(start, 'alice'));
    expect(await whoami((await store.headersFor('key-a', configured))!)).toBe('alice');
  });

  it('rejects an unusable server declaration and an unreachable server with a clear reason', async () => {
    const store = credentials();
    expect((await rejection(store.authorizationUrl('key-a', { id: '', url: upstream.mcpUrl }))).reason).toBe('invalid_server');
    expect((await rejection(store.authorizationUrl('key-a', { id: 'x', url: 'ftp://example.test/' }))).reason).toBe('invalid_server');
    const closed = await startFakeOAuthMcpServer();
    await closed.close();
    expect((await rejection(store.authorizationUrl('key-a', { id: 'gone', url: closed.mcpUrl }))).reason).toBe('upstream_unavailable');
  });
});

describe.runIf(hasRedisServer())('UpstreamCredentials on a Redis Cluster', () => {
  let cluster: RedisCluster | undefined;
  let client: RedisClient | undefined;

  // Started in a hook, whose time limit allows for a loaded machine.
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicas: 0 });
    const connecting = createRedis(cluster.url, logger);
    client = connecting;
    await eventually(() => connecting.status === 'ready', 'the cluster client ready', 30_000);
  });

  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  it('runs the flow, the collapsed refresh and revocation with each key’s data in its slot', async () => {
    const connected = client!;
    const replicas = [0, 1].map(() => new UpstreamCredentials({ redis: connected, prefix, encryptionKey: KEY, redirectUri: REDIRECT_URI, now: () => clock }));
    const keyIds = ['key-a', 'key-b', 'key-c', 'key-d'];
    for (const [index, keyId] of keyIds.entries()) await authorize(replicas[index % 2]!, keyId, `user-${index}`);
    const keys = upstreamCredentialKeys(prefix);
    // The keys' data is spread over the masters, and each key's token and refresh lock share one.
    expect(new Set(keyIds.map((keyId) => cluster!.masterOf(keys.tokens(keyId)).port)).size).toBeGreaterThan(1);
    for (const keyId of keyIds) expect(cluster!.masterOf(keys.refreshLock(keyId, 'docs')).port).toBe(cluster!.masterOf(keys.tokens(keyId)).port);

    upstream.refreshDelayMs = 200;
    clock += 3_600_000;
    const results = await Promise.all(Array.from({ length: 20 }, (_, index) => replicas[index % 2]!.headersFor(keyIds[index % 4]!, server)));
    expect(upstream.refreshes()).toBe(4);
    for (const index of keyIds.keys()) {
      const forKey = results.filter((_, call) => call % 4 === index).map(tokenOf);
      expect(new Set(forKey).size).toBe(1);
      expect(upstream.userOf(forKey[0]!)).toBe(`user-${index}`);
    }
    await replicas[1]!.revoke('key-c', 'docs');
    expect(await replicas[0]!.list('key-c')).toEqual([]);
    expect(await replicas[0]!.list('key-d')).toEqual([{ serverId: 'docs', expiresAtMs: clock + 3_600_000 }]);
  });
});

describe('UpstreamCredentials without Redis', () => {
  it('rethrows the store’s failure as its own, not as the authorization server’s', async () => {
    const target = new URL(await redisUrl());
    const proxy = await startTcpProxy(0, target.hostname, Number(target.port));
    const cut = createRedis(`redis://127.0.0.1:${proxy.port}`, logger);
    try {
      await eventually(() => cut.status === 'ready', 'Redis ready through the proxy', 10_000);
      await proxy.close();
      await eventually(() => cut.status !== 'ready', 'the client to see Redis gone', 10_000);
      const store = new UpstreamCredentials({ redis: cut, prefix, encryptionKey: KEY, redirectUri: REDIRECT_URI });
      const failure = await store.authorizationUrl('key-a', server).then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect(failure).toBeInstanceOf(Error);
      expect(failure).not.toBeInstanceOf(UpstreamOAuthError);
      // The callback's answer leaves it to the caller's 500 handling.
      await expect(oauthCallbackResponse(store, { code: 'x', state: 'y' })).rejects.not.toBeInstanceOf(UpstreamOAuthError);
    } finally {
      cut.disconnect();
      await proxy.close();
    }
  });
});

describe('oauthCallbackResponse', () => {
  it('answers a browser with a page and a client with JSON, holding neither code nor state', async () => {
    const store = credentials();
    const callback = await consent(await store.authorizationUrl('key-a', server), 'alice');
    const page = await oauthCallbackResponse(store, callback, 'text/html,application/xhtml+xml');
    expect(page).toMatchObject({ status: 200, contentType: 'text/html; charset=utf-8', completed: { keyId: 'key-a', serverId: 'docs' } });
    expect(page.headers).toMatchObject({ 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.body).toContain('Authorized');
    expect(page.body).toContain('&#34;docs&#34;');
    expect(page.body).not.toContain(callback.code!);
    expect(page.body).not.toContain(callback.state!);
    expect(await whoami((await store.headersFor('key-a', server))!)).toBe('alice');

    const replay = await oauthCallbackResponse(store, callback, 'application/json');
    expect(replay.status).toBe(400);
    expect(JSON.parse(replay.body)).toEqual({
      error: { message: 'the authorization is unknown, expired or already completed', type: 'oauth_error', param: null, code: 'invalid_state' },
    });
    expect(replay.body).not.toContain(callback.code!);
  });

  it('answers a declined consent with 403, spends its state, and stores nothing', async () => {
    const store = credentials();
    const declined = await consent(await store.authorizationUrl('key-a', server), 'alice', { deny: true });
    expect(declined.error).toBe('access_denied');
    const answer = await oauthCallbackResponse(store, declined);
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body).error.code).toBe('access_denied');
    expect(await store.list('key-a')).toEqual([]);
    expect((await oauthCallbackResponse(store, declined)).status).toBe(400);
  });

  it('takes the first of repeated parameters and refuses a query without state', async () => {
    const store = credentials();
    const callback = await consent(await store.authorizationUrl('key-a', server), 'alice');
    const answer = await oauthCallbackResponse(store, { code: [callback.code, 'other'], state: [callback.state] });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ status: 'authorized', server: 'docs' });
    expect((await oauthCallbackResponse(store, {}, 'text/html')).status).toBe(400);
    expect((await oauthCallbackResponse(store, { state: { nested: true } })).status).toBe(400);
  });
});
