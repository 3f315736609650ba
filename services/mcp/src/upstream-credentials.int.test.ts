/**
 * The per-user credentials seam against a real Redis and an OAuth-protected upstream MCP server
 * built with the official SDK: each key's calls carry its own token (asked for every request, so a
 * refreshed one is used at once), and a key without a token gets a JSON-RPC error with the URL to
 * authorize at, never reaching the upstream. The provider here stands for @gateway/mcp-oauth.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';
import { Aggregator, type McpCaller } from './aggregator.js';
import { ClientSessions } from './client-sessions.js';
import { SecretCipher } from '@gateway/redis';
import { ServerRegistry } from './server-registry.js';
import type { UpstreamCredentials, UpstreamOAuthServer } from './upstream-credentials.js';
import { UpstreamPool } from './upstream-pool.js';

const prefix = `mcp-oauth-test-${randomBytes(4).toString('hex')}:`;
const logger = createLogger('mcp', 'silent');
let redis: RedisClient;
let http: Server;
let registry: ServerRegistry;
let aggregator: Aggregator;
/** The bearer token of each upstream tools/call, in order. */
const seen: string[] = [];
/** The tokens the fake provider holds, by key id. */
const tokens = new Map<string, string>();
const asked: UpstreamOAuthServer[] = [];
/** The keys a sign-in was started for (authorizationUrl), in order. */
const started: string[] = [];

const credentials: UpstreamCredentials = {
  async headersFor(keyId, server) {
    asked.push(server);
    const token = tokens.get(keyId);
    return token ? { authorization: `Bearer ${token}` } : undefined;
  },
  async authorizationUrl(keyId, server) {
    started.push(keyId);
    return new URL(`https://auth.example/authorize?key=${keyId}&server=${server.id}`);
  },
};

function caller(keyId: string): McpCaller {
  return { keyId, teamId: '', toolAllowLists: [] };
}

async function send(keyId: string, sessionId: string, message: unknown) {
  return aggregator.handle({ caller: caller(keyId), sessionId, protocolVersion: '2025-06-18', messageJson: JSON.stringify(message) });
}

async function initialize(keyId: string): Promise<string> {
  const answer = await send(keyId, '', {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
  });
  return answer.sessionId!;
}

beforeAll(async () => {
  redis = connectRedis(await redisUrl());
  http = createServer((request, response) => {
    void (async () => {
      const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
      if (!token) return void response.writeHead(401).end();
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const server = new McpServer({ name: 'private', version: '1.0.0' });
      server.registerTool('whoami', { description: 'The caller of the upstream.' }, async () => {
        seen.push(token);
        return { content: [{ type: 'text', text: `token ${token}` }] };
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      response.on('close', () => void transport.close());
      await server.connect(transport);
      await transport.handleRequest(request, response, chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined);
    })();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  registry = new ServerRegistry(redis, new SecretCipher(randomBytes(32).toString('base64'), 'MCP_SECRETS_KEY'), { prefix, intervalMs: 100, logger });
  await registry.start();
  await registry.put({
    name: 'private',
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    transport: 'streamable_http',
    auth: 'oauth',
    description: '',
    headers: {},
    oauth: { clientId: 'gateway', clientSecret: 'shh-secret', scopes: ['tools'] },
  });
  const pool = new UpstreamPool({ credentials, logger, timeoutMs: 5_000 });
  registry.onChange((servers) => pool.sync(servers));
  const sessions = new ClientSessions(redis, { prefix, ttlSeconds: 60 });
  aggregator = new Aggregator({ registry, pool, sessions, logger, maxResponseBytes: 1_000_000, timeoutMs: 5_000 });
});

afterAll(async () => {
  registry?.stop();
  http?.closeAllConnections();
  http?.close();
  await deleteMatching(redis, `${prefix}*`);
  redis.disconnect();
});

describe('per-user credentials of an OAuth upstream', () => {
  it("sends each key's own token, asked for on every request, with the server's OAuth client given to the provider", async () => {
    tokens.set('key_A', 'token-of-a');
    tokens.set('key_B', 'token-of-b');
    const [a, b] = [await initialize('key_A'), await initialize('key_B')];
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'private__whoami', arguments: {} } };
    expect(JSON.parse((await send('key_A', a, call)).messageJson).result.content[0].text).toBe('token token-of-a');
    expect(JSON.parse((await send('key_B', b, call)).messageJson).result.content[0].text).toBe('token token-of-b');
    // A refreshed token is used at once, on the same upstream session.
    tokens.set('key_A', 'token-of-a-refreshed');
    expect(JSON.parse((await send('key_A', a, call)).messageJson).result.content[0].text).toBe('token token-of-a-refreshed');
    expect(seen).toEqual(['token-of-a', 'token-of-b', 'token-of-a-refreshed']);
    expect(asked[0]).toMatchObject({ id: 'private', clientId: 'gateway', clientSecret: 'shh-secret', scopes: ['tools'] });
    // Each key sees the server's tools with its own session.
    const list = await send('key_B', b, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(JSON.parse(list.messageJson).result.tools.map((tool: { name: string }) => tool.name)).toEqual(['private__whoami']);
  });

  it('answers a key without a token with the URL to authorize at, and never reaches the upstream; lists a sign-in tool', async () => {
    const session = await initialize('key_C');
    const before = seen.length;
    const answer = await send('key_C', session, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'private__whoami', arguments: {} } });
    // URL elicitation required (-32042), not an internal error: the link in the message and in its data.
    const message = 'The MCP server `private` needs your authorization: open https://auth.example/authorize?key=key_C&server=private and then retry.';
    const error = JSON.parse(answer.messageJson).error;
    expect(error).toMatchObject({ code: -32042, message });
    expect(error.data.elicitations).toEqual([
      { mode: 'url', elicitationId: expect.any(String), url: 'https://auth.example/authorize?key=key_C&server=private', message },
    ]);
    expect(answer.toolCall).toMatchObject({ server: 'private', failed: true, errorCode: 'credentials_unavailable' });
    expect(seen.length).toBe(before);
    // Its tools are not listed for the key; the sign-in tool stands in for them, and listing starts no sign-in.
    expect(started).toEqual(['key_C']);
    const list = await send('key_C', session, { jsonrpc: '2.0', id: 4, method: 'tools/list' });
    expect(JSON.parse(list.messageJson).result.tools.map((tool: { name: string }) => tool.name)).toEqual(['private__sign_in']);
    expect(started).toEqual(['key_C']);
  });

  it('answers a request of a key without a token that starts no sign-in with -32005 and what to do, never an internal error', async () => {
    const session = await initialize('key_D');
    const answer = await send('key_D', session, { jsonrpc: '2.0', id: 5, method: 'prompts/get', params: { name: 'private__brief' } });
    expect(JSON.parse(answer.messageJson).error).toEqual({
      code: -32005,
      message: 'The MCP server `private` needs your authorization: call its tool `private__sign_in` for the link.',
    });
    expect(started).not.toContain('key_D');
  });
});
