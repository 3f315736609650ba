/**
 * A rollout of the MCP service does not cut a long tool call: with MCP_SHUTDOWN_GRACE_MS raised
 * above the call's length, a tools/call in flight when the service gets SIGTERM is answered in full
 * through the edge (the official SDK's client), more than the earlier 10 s grace after the signal,
 * while the service reports not-ready; then it exits 0.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '@gateway/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Cluster, startCluster } from './cluster.js';
import { adminApi, mcpClients, toolNames } from './mcp-clients.js';
import { type McpUpstream, startMcpUpstream } from './mcp-upstreams.js';

const ADMIN_TOKEN = 'mcp-shutdown-e2e-admin-token-0123456789abcdef';
/** How long the upstream's tool takes: longer than the MCP service's earlier 10 s shutdown grace. */
const TOOL_MS = 12_500;

let cluster: Cluster;
let origin: string;
let upstream: McpUpstream;
const clients = mcpClients();
const admin = adminApi(() => origin, ADMIN_TOKEN);
/** Resolves when the upstream starts serving the slow tool. */
let toolStarted: () => void = () => undefined;

beforeAll(async () => {
  upstream = await startMcpUpstream({
    name: 'slow',
    tools: {
      report: async () => {
        toolStarted();
        await sleep(TOOL_MS);
        return 'report ready';
      },
    },
  });
  cluster = await startCluster({ mcp: true, env: { EDGE_ADMIN_TOKEN: ADMIN_TOKEN, MCP_RELOAD_INTERVAL_MS: '200', MCP_SHUTDOWN_GRACE_MS: '30000' } });
  origin = new URL(cluster.baseUrl).origin;
  const put = await admin('PUT', '/admin/v1/mcp-servers/slow', { url: upstream.url });
  expect(put.status, await put.text()).toBe(200);
}, 120_000);

afterAll(async () => {
  await clients.closeAll();
  await cluster?.stop();
  await upstream?.stop();
});

describe('the MCP service on SIGTERM', () => {
  it('answers a tool call in flight that outlasts the earlier 10 s grace, reporting not-ready meanwhile, then exits 0', async () => {
    const created = await admin('POST', '/admin/v1/keys', { plan: 'pro' });
    expect(created.status).toBe(201);
    const client = await clients.connect(origin, ((await created.json()) as { secret: string }).secret);
    await eventually(async () => (await toolNames(client)).includes('slow__report'), 'the slow tool listed', 20_000, 100);

    const started = new Promise<void>((resolve) => {
      toolStarted = resolve;
    });
    const call = client.callTool({ name: 'slow__report', arguments: {} }, undefined, { timeout: 60_000 });
    await started;
    const mcp = cluster.processes.mcp;
    const exited = new Promise<number | null>((resolve) => mcp.once('exit', (code) => resolve(code)));
    const signalled = Date.now();
    mcp.kill('SIGTERM');

    // Not ready from the signal on, while the call goes on.
    const readiness = `http://127.0.0.1:${cluster.ports.mcpMetrics}/readyz`;
    await eventually(async () => (await fetch(readiness)).status === 503, 'the MCP service to report not-ready', 10_000, 50);

    const result = (await call) as { content: Array<{ type: string; text: string }>; isError?: boolean };
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'report ready' }]);
    expect(Date.now() - signalled).toBeGreaterThan(10_000);
    expect(await exited).toBe(0);
  }, 120_000);
});
