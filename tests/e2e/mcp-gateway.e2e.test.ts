/**
 * The MCP gateway end to end: the official MCP TypeScript SDK as a client of /mcp on a running
 * cluster with the MCP service, two upstream MCP servers built with the same SDK (one Streamable
 * HTTP behind an API key header, one HTTP+SSE), declared through /admin/v1/mcp-servers. A key
 * lists and calls only the tools it may use; a permission change applies on two edges within a
 * second; a tool call is metered; revoking a key ends its MCP session; a request without a key is
 * told where the resource's metadata is; hostile JSON-RPC bodies never get a 5xx or hang.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { eventually } from '@gateway/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metric, startSecondEdge } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';
import { adminApi, mcpClients, toolNames } from './mcp-clients.js';
import { startMcpUpstream, type McpUpstream } from './mcp-upstreams.js';

const ADMIN_TOKEN = 'mcp-e2e-admin-token-0123456789abcdef';
const ALPHA_API_KEY = 'alpha-upstream-secret-4f1d2c';

let alpha: McpUpstream;
let beta: McpUpstream;
let gamma: McpUpstream;
const gateway = new ClusterFixture();
let secondEdge: Awaited<ReturnType<typeof startSecondEdge>> | undefined;
const clients = mcpClients();

const admin = adminApi(() => gateway.origin, ADMIN_TOKEN);

async function createKey(allowedTools?: string[] | null): Promise<{ id: string; secret: string }> {
  const response = await admin('POST', '/admin/v1/keys', { plan: 'pro', ...(allowedTools === undefined ? {} : { allowed_mcp_tools: allowedTools }) });
  expect(response.status).toBe(201);
  return (await response.json()) as { id: string; secret: string };
}

/** An SDK client connected to an edge's /mcp with a gateway key. */
function connect(secret: string, at = gateway.origin): Promise<Client> {
  return clients.connect(at, secret);
}

function text(result: unknown): string {
  return ((result as { content: { type: string; text: string }[] }).content[0] ?? { text: '' }).text;
}

beforeAll(async () => {
  [alpha, beta] = await Promise.all([
    startMcpUpstream({
      name: 'alpha',
      apiKey: ALPHA_API_KEY,
      tools: { add: (args) => String(Number(args.a) + Number(args.b)), echo: (args) => String(args.text ?? '') },
    }),
    startMcpUpstream({ name: 'beta', transport: 'sse', tools: { time_now: () => 'noon', secret_op: () => 'classified' }, extras: 'beta notes' }),
  ]);
  gamma = await startMcpUpstream({
    name: 'gamma',
    tools: {
      ping: () => 'pong',
      big: () => 'x'.repeat(100_000),
      slow: () => new Promise((resolve) => setTimeout(() => resolve('late'), 8_000)),
    },
  });
  await gateway.start({
    mcp: true,
    env: { EDGE_ADMIN_TOKEN: ADMIN_TOKEN, MCP_RELOAD_INTERVAL_MS: '200', MCP_MAX_RESPONSE_BYTES: '65536', MCP_TOOL_CALL_TIMEOUT_MS: '5000' },
  });
  const put = await admin('PUT', '/admin/v1/mcp-servers/alpha', { url: alpha.url, headers: { 'x-api-key': ALPHA_API_KEY }, description: 'arithmetic' });
  expect(put.status).toBe(200);
  expect((await admin('PUT', '/admin/v1/mcp-servers/beta', { url: beta.url, transport: 'sse' })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await clients.closeAll();
  await secondEdge?.stop();
  await gateway.stop();
  await Promise.all([alpha?.stop(), beta?.stop(), gamma?.stop()]);
});

describe('the admin API of MCP servers', () => {
  it('lists the servers with their header names, never the values', async () => {
    const response = await admin('GET', '/admin/v1/mcp-servers');
    const body = await response.text();
    expect(response.status).toBe(200);
    expect(body).not.toContain(ALPHA_API_KEY);
    const servers = (JSON.parse(body) as { data: { name: string; header_names: string[]; transport: string }[] }).data;
    expect(servers.map((server) => [server.name, server.transport, server.header_names])).toEqual([
      ['alpha', 'streamable_http', ['x-api-key']],
      ['beta', 'sse', []],
    ]);
  });

  it('refuses a server name tools cannot be namespaced by, and an unknown server is a 404', async () => {
    const bad = await admin('PUT', '/admin/v1/mcp-servers/Bad_Name', { url: 'http://127.0.0.1:1/mcp' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('name');
    expect((await admin('GET', '/admin/v1/mcp-servers/nope')).status).toBe(404);
    expect((await admin('DELETE', '/admin/v1/mcp-servers/nope')).status).toBe(404);
  });
});

describe('/mcp with the official SDK', () => {
  it('lists and calls only the tools the key may use, with the upstream API key sent by the gateway', async () => {
    const key = await createKey(['alpha', 'beta__time_now']);
    const client = await connect(key.secret);
    expect(await toolNames(client)).toEqual(['alpha__add', 'alpha__echo', 'beta__time_now']);
    expect(text(await client.callTool({ name: 'alpha__add', arguments: { a: 2, b: 3 } }))).toBe('5');
    expect(text(await client.callTool({ name: 'beta__time_now', arguments: {} }))).toBe('noon');
    await expect(client.callTool({ name: 'beta__secret_op', arguments: {} })).rejects.toThrow(/not allowed to use the tool `beta__secret_op`/);
    await expect(client.callTool({ name: 'gamma__nothing', arguments: {} })).rejects.toThrow(/Unknown tool/);
    expect(beta.calls.get('secret_op') ?? 0).toBe(0);
    expect(alpha.calls.get('add')).toBe(1);
    expect(alpha.refused).toBe(0);
  });

  it("applies the team's list besides the key's: a tool must be allowed by both", async () => {
    const team = (await (await admin('POST', '/admin/v1/teams', { name: `mcp-${Date.now()}`, allowed_mcp_tools: ['beta', 'alpha__add'] })).json()) as {
      id: string;
      allowed_mcp_tools: string[];
    };
    expect(team.allowed_mcp_tools).toEqual(['beta', 'alpha__add']);
    const member = (await (await admin('POST', '/admin/v1/keys', { plan: 'pro', team_id: team.id })).json()) as { secret: string };
    expect(await toolNames(await connect(member.secret))).toEqual(['alpha__add', 'beta__secret_op', 'beta__time_now']);
    const narrowed = (await (
      await admin('POST', '/admin/v1/keys', { plan: 'pro', team_id: team.id, allowed_mcp_tools: ['alpha', 'beta__time_now'] })
    ).json()) as {
      secret: string;
    };
    const client = await connect(narrowed.secret);
    expect(await toolNames(client)).toEqual(['alpha__add', 'beta__time_now']);
    await expect(client.callTool({ name: 'alpha__echo', arguments: { text: 'x' } })).rejects.toThrow(/not allowed/);
  });

  it("serves the upstreams' prompts (namespaced) and resources to a key that may use their server, and none to one that may not", async () => {
    const key = await createKey(['beta__time_now']);
    const client = await connect(key.secret);
    expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual([]);
    expect((await client.listResources()).resources.map((resource) => resource.uri)).toEqual(['beta://readme']);
    const wide = await connect((await createKey(['beta'])).secret);
    expect((await wide.listPrompts()).prompts.map((prompt) => prompt.name)).toEqual(['beta__brief']);
    const prompt = await wide.getPrompt({ name: 'beta__brief', arguments: { topic: 'release' } });
    expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: 'beta notes: release' });
    const read = await wide.readResource({ uri: 'beta://readme' });
    expect(read.contents[0]).toMatchObject({ uri: 'beta://readme', text: 'beta notes' });
    const none = await connect((await createKey(['alpha'])).secret);
    expect((await none.listResources()).resources).toEqual([]);
    await expect(none.readResource({ uri: 'beta://readme' })).rejects.toThrow(/Resource not found/);
  });

  it('meters each tool call as a request of its key, visible in the latest requests', async () => {
    const key = await createKey(null);
    const client = await connect(key.secret);
    expect(text(await client.callTool({ name: 'alpha__echo', arguments: { text: 'hi-argument-7c1' } }))).toBe('hi-argument-7c1');
    const recent = await eventually(
      async () => {
        const body = (await (await admin('GET', `/admin/v1/requests?key_id=${key.id}`)).json()) as {
          data: { model: string; operation?: string; outcome: string }[];
        };
        return body.data.length > 0 ? body.data : undefined;
      },
      'the tool call to be metered',
      30_000,
      200,
    );
    expect(recent[0]).toMatchObject({ model: 'alpha__echo', outcome: 'completed' });
    // The key's own usage API counts the call as its one request, at no cost.
    const usage = await eventually(
      async () => {
        const response = await fetch(`${gateway.cluster.baseUrl}/usage?start=${Math.floor(Date.now() / 1000) - 3_600}&bucket=hour`, {
          headers: { authorization: `Bearer ${key.secret}` },
        });
        const body = (await response.json()) as { totals: { requests: number; errors: number; cost_usd: number } };
        return body.totals.requests === 1 ? body.totals : undefined;
      },
      'the tool call in the usage API',
      30_000,
      200,
    );
    expect(usage).toMatchObject({ requests: 1, errors: 0, cost_usd: 0 });
    // The audit trail names who called which tool on which server, never the arguments or the result.
    const audit = await eventually(
      async () => {
        const response = await admin('GET', `/admin/v1/audit?actor=${key.id}`);
        const body = await response.text();
        return body.includes('mcp.tool_call') ? body : undefined;
      },
      'the tool call in the audit trail',
      10_000,
      100,
    );
    expect(audit).not.toContain('hi-argument-7c1');
    const entry = (JSON.parse(audit) as { data: { action: string; target_id: string; actor: { subject: string; via: string }; after: unknown }[] }).data[0]!;
    expect(entry).toMatchObject({
      action: 'mcp.tool_call',
      target_id: 'alpha__echo',
      actor: { subject: key.id, via: 'mcp' },
      after: { server: 'alpha', tool: 'echo', failed: false },
    });
  });

  it('applies a permission change on every edge within a second', async () => {
    secondEdge = await startSecondEdge(gateway.cluster);
    const key = await createKey(['alpha']);
    const [first, second] = await Promise.all([connect(key.secret), connect(key.secret, secondEdge.origin)]);
    expect(await toolNames(first)).toEqual(['alpha__add', 'alpha__echo']);
    expect(await toolNames(second)).toEqual(['alpha__add', 'alpha__echo']);
    expect((await admin('PATCH', `/admin/v1/keys/${key.id}`, { allowed_mcp_tools: ['beta*'] })).status).toBe(200);
    const changedAt = Date.now();
    await Promise.all(
      [first, second].map((client) =>
        eventually(async () => JSON.stringify(await toolNames(client)) === JSON.stringify(['beta__secret_op', 'beta__time_now']), 'the new tools', 5_000, 20),
      ),
    );
    expect(Date.now() - changedAt).toBeLessThan(1_000);
    await expect(second.callTool({ name: 'alpha__add', arguments: { a: 1, b: 1 } })).rejects.toThrow(/not allowed/);
  });

  it("passes list_changed on over the session's GET stream when a server is added, whose tools are listed next", async () => {
    const key = await createKey(null);
    const client = await connect(key.secret);
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changes += 1;
    });
    expect(await toolNames(client)).not.toContain('gamma__ping');
    // The SDK opens the GET stream after initialize, on its own: a change made before it is open
    // reaches nobody, so the server is saved again until a notification arrives.
    await eventually(
      async () => {
        if (changes > 0) return true;
        expect((await admin('PUT', '/admin/v1/mcp-servers/gamma', { url: gamma.url })).status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 700));
        return changes > 0;
      },
      'notifications/tools/list_changed',
      15_000,
      0,
    );
    expect(await toolNames(client)).toContain('gamma__ping');
    expect(text(await client.callTool({ name: 'gamma__ping', arguments: {} }))).toBe('pong');
    expect((await admin('DELETE', '/admin/v1/mcp-servers/gamma')).status).toBe(200);
    await eventually(async () => !(await toolNames(client)).includes('gamma__ping'), 'gamma to be gone', 5_000, 50);
  });

  it("passes on an upstream's own tools/list_changed: a tool the server adds is listed and callable through the gateway", async () => {
    const epsilon = await startMcpUpstream({ name: 'epsilon', stateful: true, tools: { first: () => 'one' } });
    try {
      expect((await admin('PUT', '/admin/v1/mcp-servers/epsilon', { url: epsilon.url })).status).toBe(200);
      const key = await createKey(['epsilon']);
      const client = await connect(key.secret);
      let changes = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
        changes += 1;
      });
      // Listed once: the gateway caches the list until the server says it changed.
      await eventually(async () => (await toolNames(client)).includes('epsilon__first'), 'epsilon to be served', 5_000, 50);
      // The server tells only the sessions whose GET stream is open (the gateway's opens it on its
      // own, after initialize): it adds one more tool at each try until the gateway lists one.
      let added = 0;
      const listed = await eventually(
        async () => {
          epsilon.addTool(`added_${added++}`, () => 'two');
          return (await toolNames(client)).find((name) => name.startsWith('epsilon__added_'));
        },
        'an added tool to be listed',
        10_000,
        200,
      );
      expect(text(await client.callTool({ name: listed, arguments: {} }))).toBe('two');
      await eventually(() => changes > 0, 'the client to be told', 5_000, 50);
    } finally {
      await admin('DELETE', '/admin/v1/mcp-servers/epsilon');
      await epsilon.stop();
    }
  });

  it('refuses an upstream answer over MCP_MAX_RESPONSE_BYTES and a call over MCP_TOOL_CALL_TIMEOUT_MS with JSON-RPC errors, metered as failed', async () => {
    expect((await admin('PUT', '/admin/v1/mcp-servers/gamma', { url: gamma.url })).status).toBe(200);
    try {
      const key = await createKey(['gamma']);
      const client = await connect(key.secret);
      await eventually(async () => (await toolNames(client)).includes('gamma__big'), 'gamma to be served', 5_000, 50);
      // What the MCP alerts read: each failure by its outcome, exported from 0 before any.
      const mcpMetrics = `http://127.0.0.1:${gateway.cluster.ports.mcpMetrics}/metrics`;
      const calls = (outcome: string) => metric(mcpMetrics, 'gateway_mcp_tool_call_duration_seconds_count', { outcome });
      const before = { tooLarge: await calls('response_too_large'), timeout: await calls('timeout') };
      await expect(client.callTool({ name: 'gamma__big', arguments: {} })).rejects.toThrow(/larger than this gateway relays \(65536 bytes\)/);
      const started = Date.now();
      await expect(client.callTool({ name: 'gamma__slow', arguments: {} })).rejects.toThrow(/did not answer in time/);
      expect(Date.now() - started).toBeLessThan(7_500);
      expect({ tooLarge: await calls('response_too_large'), timeout: await calls('timeout') }).toEqual({
        tooLarge: before.tooLarge + 1,
        timeout: before.timeout + 1,
      });
      const failed = await eventually(
        async () => {
          const body = (await (await admin('GET', `/admin/v1/requests?key_id=${key.id}`)).json()) as { data: { model: string; outcome: string }[] };
          return body.data.length >= 2 ? body.data : undefined;
        },
        'both calls to be metered',
        15_000,
        200,
      );
      expect(failed.map((entry) => [entry.model, entry.outcome]).sort()).toEqual([
        ['gamma__big', 'failed'],
        ['gamma__slow', 'failed'],
      ]);
    } finally {
      await admin('DELETE', '/admin/v1/mcp-servers/gamma');
    }
  }, 60_000);

  it('answers a clear JSON-RPC error for a server that needs per-user OAuth, and lists none of its tools', async () => {
    const put = await admin('PUT', '/admin/v1/mcp-servers/delta', {
      url: gamma.url,
      auth: { type: 'oauth', client_id: 'gateway-client', client_secret: 'oauth-client-secret-9f8e', scopes: ['tools:read'] },
    });
    const putBody = await put.text();
    expect(put.status).toBe(200);
    expect(putBody).not.toContain('oauth-client-secret-9f8e');
    expect(JSON.parse(putBody)).toMatchObject({ auth: 'oauth', oauth: { client_id: 'gateway-client', scopes: ['tools:read'], client_secret_set: true } });
    const key = await createKey(null);
    const client = await connect(key.secret);
    expect((await toolNames(client)).some((name) => name.startsWith('delta__'))).toBe(false);
    await expect(client.callTool({ name: 'delta__ping', arguments: {} })).rejects.toThrow(/needs per-user OAuth authorization/);
    expect((await admin('DELETE', '/admin/v1/mcp-servers/delta')).status).toBe(200);
  });

  it("counts each tool call against the key's requests per minute, a refused call a JSON-RPC error, listing not counted", async () => {
    const response = await admin('POST', '/admin/v1/keys', { plan: 'pro', limits: { requests_per_minute: 2 } });
    const key = (await response.json()) as { secret: string };
    const client = await connect(key.secret);
    for (let index = 0; index < 3; index++) expect((await toolNames(client)).length).toBe(4);
    const before = alpha.calls.get('echo') ?? 0;
    expect(text(await client.callTool({ name: 'alpha__echo', arguments: { text: 'one' } }))).toBe('one');
    expect(text(await client.callTool({ name: 'alpha__echo', arguments: { text: 'two' } }))).toBe('two');
    await expect(client.callTool({ name: 'alpha__echo', arguments: { text: 'three' } })).rejects.toThrow(/Rate limit reached on requests per minute/);
    expect(alpha.calls.get('echo')).toBe(before + 2);
  });

  it('refuses a message over the body limit with a 413 JSON-RPC error', async () => {
    const key = await createKey(null);
    const response = await fetch(`${gateway.origin}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'alpha__echo', arguments: { text: 'x'.repeat(2 * 1024 * 1024) } } }),
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { jsonrpc: string; error: { message: string } }).error.message).toMatch(/too large/);
  });

  it('ends the MCP session of a revoked key', async () => {
    const key = await createKey(null);
    const client = await connect(key.secret);
    expect((await toolNames(client)).length).toBe(4);
    expect((await admin('DELETE', `/admin/v1/keys/${key.id}`)).status).toBe(200);
    await expect(client.listTools()).rejects.toThrow(/This API key has been revoked/);
  });

  it("ends a revoked key's GET stream, and DELETE ends a session for good", async () => {
    const key = await createKey(null);
    const headers = (sessionId: string) => ({
      authorization: `Bearer ${key.secret}`,
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-06-18',
    });
    const open = async () => {
      const client = await connect(key.secret);
      return (client.transport as StreamableHTTPClientTransport).sessionId ?? '';
    };
    // DELETE: the session is gone, a later message is told so (404, the client initializes again).
    const ended = await open();
    expect((await fetch(`${gateway.origin}/mcp`, { method: 'DELETE', headers: headers(ended) })).status).toBe(200);
    const after = await fetch(`${gateway.origin}/mcp`, {
      method: 'POST',
      headers: { ...headers(ended), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(after.status).toBe(404);
    // A GET stream of a live session stays open until the key is revoked, then ends.
    const sessionId = await open();
    // Another key presenting the session is told it does not exist.
    const stranger = await createKey(null);
    const stolen = await fetch(`${gateway.origin}/mcp`, {
      method: 'POST',
      headers: {
        ...headers(sessionId),
        authorization: `Bearer ${stranger.secret}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(stolen.status).toBe(404);
    const stream = await fetch(`${gateway.origin}/mcp`, { headers: { ...headers(sessionId), accept: 'text/event-stream' } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    const reader = stream.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    expect((await admin('DELETE', `/admin/v1/keys/${key.id}`)).status).toBe(200);
    const startedAt = Date.now();
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
    }
    expect(Date.now() - startedAt).toBeLessThan(10_000);
  });

  it('answers a request without a key with a 401 pointing at the protected-resource metadata', async () => {
    const response = await fetch(`${gateway.origin}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${gateway.origin}/.well-known/oauth-protected-resource/mcp"`);
    expect(((await response.json()) as { jsonrpc: string }).jsonrpc).toBe('2.0');
    const metadata = (await (await fetch(`${gateway.origin}/.well-known/oauth-protected-resource/mcp`)).json()) as { resource: string };
    expect(metadata.resource).toBe(`${gateway.origin}/mcp`);
  });

  it('answers hostile JSON-RPC bodies without a 5xx or a hang', async () => {
    const key = await createKey(null);
    const client = await connect(key.secret);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId ?? '';
    const statuses = new Map<number, number>();
    const bodies = [...hostileMessages(300)];
    for (let start = 0; start < bodies.length; start += 10) {
      await Promise.all(
        bodies.slice(start, start + 10).map(async (body) => {
          const response = await fetch(`${gateway.origin}/mcp`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${key.secret}`,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              'mcp-session-id': sessionId,
              'mcp-protocol-version': '2025-06-18',
            },
            body,
            signal: AbortSignal.timeout(30_000),
          });
          await response.arrayBuffer();
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          if (response.status >= 500) throw new Error(`${response.status} for ${body.slice(0, 200)}`);
        }),
      );
    }
    expect([...statuses.keys()].every((status) => status < 500)).toBe(true);
    // The session still works after all of them.
    expect((await toolNames(client)).length).toBe(4);
  }, 120_000);
});

/** A deterministic generator of broken, odd and oversized JSON-RPC messages. */
function* hostileMessages(count: number): Generator<string> {
  let seed = 4242;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const values: unknown[] = [
    null,
    true,
    0,
    -1,
    1e308,
    '',
    'x'.repeat(5000),
    [],
    {},
    [null],
    { a: { b: [1] } },
    '\u0000\ud800',
    'alpha__add',
    'beta__secret_op',
  ];
  const methods = [
    'tools/call',
    'tools/list',
    'prompts/get',
    'prompts/list',
    'resources/read',
    'resources/list',
    'initialize',
    'ping',
    'nope',
    '',
    'notifications/initialized',
  ];
  const fixed = [
    '',
    '{',
    'null',
    '[]',
    '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
    '"just a string"',
    '{"jsonrpc":"1.0","id":1,"method":"ping"}',
    `${'['.repeat(5000)}${']'.repeat(5000)}`,
    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`,
    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":${'{"a":'.repeat(20000)}1${'}'.repeat(20000)}}}`,
    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":${'{"a":'.repeat(200)}1${'}'.repeat(200)}}}`,
    '{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}',
    '{"jsonrpc":"2.0","id":1,"result":{}}',
    '{"__proto__":{"polluted":true},"jsonrpc":"2.0","id":1,"method":"tools/list"}',
  ];
  for (let index = 0; index < count; index++) {
    if (index < fixed.length) {
      yield fixed[index]!;
      continue;
    }
    const message: Record<string, unknown> = { jsonrpc: random() < 0.9 ? '2.0' : pick(values), method: pick(methods) };
    if (random() < 0.85) message.id = random() < 0.8 ? index : pick(values);
    const params: Record<string, unknown> = {};
    if (random() < 0.7) params.name = random() < 0.6 ? pick(['alpha__add', 'alpha__echo', 'beta__secret_op', 'alpha__', '__add', 'alpha']) : pick(values);
    if (random() < 0.6) params.arguments = random() < 0.5 ? { a: pick(values), b: pick(values), text: pick(values) } : pick(values);
    if (random() < 0.2) params.uri = pick(values);
    if (random() < 0.2) params.protocolVersion = pick(values);
    if (random() < 0.9) message.params = random() < 0.9 ? params : pick(values);
    const json = JSON.stringify(message);
    yield random() < 0.1 ? json.slice(0, Math.floor(random() * json.length)) : json;
  }
}
