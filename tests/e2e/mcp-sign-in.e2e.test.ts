/**
 * The sign-in an `auth: oauth` upstream MCP server needs, as the official MCP SDK's client shows it:
 * a tools/call of a key without a token is the MCP error "URL elicitation required" (-32042, the
 * SDK's UrlElicitationRequiredError), not an internal error, with the link in its elicitations and
 * in its message; the link signs the key's user in, and the same call then goes through.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorCode, McpError, UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import { type FakeOAuthMcpServer, startFakeOAuthMcpServer } from '@gateway/mcp-oauth/testing';
import { eventually } from '@gateway/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Cluster, startCluster } from './cluster.js';
import { adminApi, mcpClients, toolNames } from './mcp-clients.js';

const ADMIN_TOKEN = 'mcp-sign-in-e2e-admin-token-0123456789abcdef';

let cluster: Cluster;
let origin: string;
let upstream: FakeOAuthMcpServer;
const clients = mcpClients();
const admin = adminApi(() => origin, ADMIN_TOKEN);

async function connect(): Promise<Client> {
  const created = await admin('POST', '/admin/v1/keys', { plan: 'pro' });
  expect(created.status).toBe(201);
  return clients.connect(origin, ((await created.json()) as { secret: string }).secret);
}

/** The error a tools/call of `name` rejects with (the test fails if it answers). */
async function callError(client: Client, name: string): Promise<unknown> {
  return client.callTool({ name, arguments: {} }).then(
    (result) => {
      throw new Error(`${name} answered ${JSON.stringify(result)}`);
    },
    (error: unknown) => error,
  );
}

beforeAll(async () => {
  upstream = await startFakeOAuthMcpServer();
  cluster = await startCluster({ mcp: true, mcpOAuth: true, env: { EDGE_ADMIN_TOKEN: ADMIN_TOKEN, MCP_RELOAD_INTERVAL_MS: '200' } });
  origin = new URL(cluster.baseUrl).origin;
  const put = await admin('PUT', '/admin/v1/mcp-servers/linear', { url: upstream.mcpUrl, auth: { type: 'oauth' } });
  expect(put.status, await put.text()).toBe(200);
}, 120_000);

afterAll(async () => {
  await clients.closeAll();
  await cluster?.stop();
  await upstream?.close();
});

describe('the sign-in an OAuth upstream needs, through the official MCP client', () => {
  it('is a URL elicitation required error (-32042) with the link, and the link signs the key in', async () => {
    const client = await connect();
    // The sign-in tool stands in for the server's tools once every replica serves the server.
    await eventually(async () => (await toolNames(client)).includes('linear__sign_in'), 'the sign-in tool listed', 20_000, 100);

    const error = await callError(client, 'linear__sign_in');
    expect(error).toBeInstanceOf(UrlElicitationRequiredError);
    const elicitation = error as UrlElicitationRequiredError;
    expect(elicitation.code).toBe(ErrorCode.UrlElicitationRequired);
    expect(elicitation.code).toBe(-32042);
    expect(elicitation.elicitations).toHaveLength(1);
    const [asked] = elicitation.elicitations;
    expect(asked).toMatchObject({ mode: 'url', elicitationId: expect.any(String) });
    const url = new URL(asked!.url);
    expect(url.origin).toBe(upstream.issuer);
    expect(url.searchParams.get('redirect_uri')).toBe(`${origin}/mcp/oauth/callback`);
    // A client that shows only the message shows the link too.
    expect(elicitation.message).toContain(`The MCP server \`linear\` needs your authorization: open ${url.href} and then retry.`);
    expect(asked!.message).toContain(url.href);
    expect(upstream.calls).toEqual([]);

    // Any tool of the server asks the same way, each call with a sign-in of its own.
    const direct = await callError(client, 'linear__whoami');
    expect(direct).toBeInstanceOf(UrlElicitationRequiredError);
    expect((direct as UrlElicitationRequiredError).elicitations[0]!.elicitationId).not.toBe(asked!.elicitationId);

    // The link works: the user signs in at the authorization server, which sends the browser to the
    // edge's callback, and the key's call then goes through with that user's token.
    const signed = new URL(url);
    signed.searchParams.set('user', 'dana');
    const redirect = await fetch(signed, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    const callback = await fetch(redirect.headers.get('location')!, { headers: { accept: 'application/json' } });
    expect(callback.status).toBe(200);
    expect(await callback.json()).toEqual({ status: 'authorized', server: 'linear' });
    const result = (await client.callTool({ name: 'linear__whoami', arguments: {} })) as { content: { text: string }[]; isError?: boolean };
    expect(result.isError).toBeFalsy();
    expect(result.content[0]!.text).toBe('dana');
    expect(await toolNames(client)).toEqual(['linear__whoami']);
  }, 120_000);

  it('a tool the key may not use is still refused as not allowed (-32003), not as a sign-in', async () => {
    const created = await admin('POST', '/admin/v1/keys', { plan: 'pro', allowed_mcp_tools: ['other__*'] });
    expect(created.status, await created.clone().text()).toBe(201);
    const client = await clients.connect(origin, ((await created.json()) as { secret: string }).secret);
    const error = await callError(client, 'linear__whoami');
    expect(error).toBeInstanceOf(McpError);
    expect(error).not.toBeInstanceOf(UrlElicitationRequiredError);
    expect((error as McpError).code).toBe(-32003);
  }, 60_000);
});
