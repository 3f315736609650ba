/**
 * The MCP servers page of the web console, in a real browser (Debian's Chromium, driven by
 * playwright-core) against a running cluster with the MCP service: declare an upstream MCP server
 * with an API key header, see it listed with the header's name and never its value, find its tools
 * through /mcp with the official SDK, and remove it. The page logs no error throughout.
 */
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { eventually } from '@gateway/testing';
import { startCluster, type Cluster } from './cluster.js';
import { consoleClusterEnv, openConsoleBrowser, requireChromium, type ConsoleBrowser } from './console-browser.js';
import { startMcpUpstream, type McpUpstream } from './mcp-upstreams.js';
import { stopInOrder } from './teardown.js';

const ADMIN_TOKEN = `admin-${randomBytes(24).toString('hex')}`;
const UPSTREAM_KEY = `upstream-${randomBytes(8).toString('hex')}`;

let cluster: Cluster;
let origin: string;
let browser: ConsoleBrowser;
let page: Page;
let upstream: McpUpstream;

const byTestId = (id: string) => page.getByTestId(id);

async function toolNames(): Promise<string[]> {
  const client = new Client({ name: 'console-e2e', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${cluster.apiKey}` } } }),
  );
  try {
    return (await client.listTools()).tools.map((tool) => tool.name).sort();
  } finally {
    await client.close();
  }
}

beforeAll(async () => {
  requireChromium();
  upstream = await startMcpUpstream({ name: 'wiki', apiKey: UPSTREAM_KEY, tools: { search: () => 'found' } });
  cluster = await startCluster({ mcp: true, env: { ...consoleClusterEnv(), EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
  origin = new URL(cluster.baseUrl).origin;
  browser = await openConsoleBrowser();
  page = browser.page;
}, 120_000);

afterAll(() => stopInOrder(browser, cluster, upstream));

describe('MCP servers in the web console', () => {
  it('declares a server with a header, lists it without the header value, and its tools reach /mcp', async () => {
    await browser.logIn(`${origin}/console#/mcp-servers`, ADMIN_TOKEN);
    await byTestId('nav-mcp-servers').click();
    await page.locator('[data-testid="page-mcp-servers"][data-state="ready"]').waitFor({ timeout: 30_000 });
    await byTestId('mcp-server-name').fill('wiki');
    await byTestId('mcp-server-url').fill(upstream.url);
    await byTestId('mcp-server-header-name').fill('x-api-key');
    await byTestId('mcp-server-header-value').fill(UPSTREAM_KEY);
    await byTestId('put-mcp-server-submit').click();
    const row = page.locator('[data-testid="mcp-server-row"][data-server-name="wiki"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('x-api-key');
    expect(await page.content()).not.toContain(UPSTREAM_KEY);
    await eventually(async () => (await toolNames()).includes('wiki__search'), 'the tool to be served', 10_000, 100);
    expect(upstream.refused).toBe(0);
  });

  it('removes the server after a confirmation, and its tools leave /mcp', async () => {
    const row = page.locator('[data-testid="mcp-server-row"][data-server-name="wiki"]');
    await row.getByTestId('mcp-server-delete').click();
    await page.getByTestId('mcp-server-delete-confirm').click();
    await row.waitFor({ state: 'detached' });
    await eventually(async () => !(await toolNames()).includes('wiki__search'), 'the tool to be gone', 10_000, 100);
    expect(browser.problems).toEqual([]);
  });
});
