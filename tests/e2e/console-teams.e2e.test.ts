/**
 * Teams in the web console, in a real browser (Debian's Chromium, driven by playwright-core)
 * against the running cluster: create a team with a rate limit and an allow-list on the Teams
 * page, create a key in it on the Keys page and see the key's team, hit the team's limit with the
 * key, find the team's usage on Usage, change the team's limit and see it applied, and find the
 * team refusing deletion while it has a live key. The page logs no error throughout. A screenshot
 * of the Teams page goes to test-results/console/.
 *
 * The steps share one browser page and depend on each other in order.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { eventually } from '@gateway/testing';
import { startCluster, type Cluster } from './cluster.js';
import { consoleClusterEnv, openConsoleBrowser, requireChromium, type ConsoleBrowser } from './console-browser.js';

const ADMIN_TOKEN = `admin-${randomBytes(24).toString('hex')}`;
const SCREENSHOTS = fileURLToPath(new URL('../../test-results/console/', import.meta.url));

let cluster: Cluster;
let origin: string;
let browser: ConsoleBrowser;
let page: Page;
const teamName = `team-${randomBytes(3).toString('hex')}`;
let teamId: string | undefined;
let secret: string | undefined;

const byTestId = (id: string) => page.getByTestId(id);
const pageReady = (name: string) => browser.pageReady(name, 30_000);
const teamRow = () => page.locator('[data-testid="team-row"]', { hasText: teamName });

function complete(apiKey: string): Promise<Response> {
  return fetch(`${cluster.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: 'Hello from the teams console test.' }], max_tokens: 8 }),
  });
}

beforeAll(async () => {
  requireChromium();
  mkdirSync(SCREENSHOTS, { recursive: true });
  cluster = await startCluster({ env: { ...consoleClusterEnv(), EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
  origin = new URL(cluster.baseUrl).origin;
  // The refused deletion (409) is expected, and the browser reports it; so is a read of Usage that
  // timed out on a loaded machine (503), which the test reads again.
  browser = await openConsoleBrowser({
    expected: (message) => /status of 409/.test(message.text()) || (/status of 503/.test(message.text()) && message.location().url.includes('/admin/v1/usage')),
  });
  page = browser.page;
});

afterAll(async () => {
  await browser?.close();
  await cluster?.stop();
});

describe('teams in the web console', () => {
  it('creates a team with a limit and an allow-list', async () => {
    await browser.logIn(`${origin}/console`, ADMIN_TOKEN);
    await pageReady('keys');
    await byTestId('nav-teams').click();
    await pageReady('teams');
    await byTestId('create-team-name').fill(teamName);
    await byTestId('create-team-rpm').fill('2');
    await byTestId('create-team-models').fill('sim-*, gpt-4o');
    await byTestId('create-team-submit').click();
    await teamRow().waitFor();
    teamId = (await teamRow().getAttribute('data-team-id')) ?? undefined;
    expect(teamId).toMatch(/^team_[A-Za-z0-9]{16}$/);
    expect(await teamRow().textContent()).toContain('sim-*, gpt-4o');
    await page.screenshot({ path: `${SCREENSHOTS}teams.png`, fullPage: true });
  });

  it("creates a key in the team, shows the key's team, and the team's limit holds for the key", async () => {
    await byTestId('nav-keys').click();
    await pageReady('keys');
    await byTestId('create-key-plan').selectOption('pro');
    await byTestId('create-key-team').selectOption(teamId!);
    await byTestId('create-key-submit').click();
    await byTestId('new-key-box').waitFor({ timeout: 30_000 });
    secret = (await byTestId('new-key-secret').textContent())?.trim();
    const keyId = (await byTestId('new-key-id').textContent())?.trim();
    const row = page.locator(`[data-testid="key-row"][data-key-id="${keyId}"]`);
    await row.waitFor();
    expect(await row.getByTestId('key-team').textContent()).toBe(teamName);
    await byTestId('new-key-dismiss').click();

    // The team allows 2 requests a minute; the key's plan (pro) many more.
    expect((await complete(secret!)).status).toBe(200);
    expect((await complete(secret!)).status).toBe(200);
    const refused = await complete(secret!);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/team/);
  });

  it("shows the team's usage on Usage, and applies a change of the team's limit", async () => {
    await byTestId('nav-usage').click();
    const usageRow = page.locator(`[data-testid="usage-team-row"][data-group-id="${teamId}"]`);
    // Usage reads every metered key of the shared Redis: on a loaded machine a read may time out
    // (the page says so, 503), and a refresh reads again, as a user would.
    await eventually(
      async () => {
        await byTestId('usage-refresh').click();
        if ((await browser.pageSettled('usage')) !== 'ready') return false;
        return (await usageRow.count()) > 0;
      },
      "the team's usage on Usage",
      30_000,
      500,
    );
    expect(await usageRow.textContent()).toContain(teamName);

    await byTestId('nav-teams').click();
    await pageReady('teams');
    await teamRow().getByTestId('team-edit').click();
    await byTestId('edit-team-rpm').fill('');
    await byTestId('edit-team-save').click();
    await page.locator('[data-testid="team-row"]', { hasText: teamName }).getByTestId('team-edit').waitFor();
    expect((await complete(secret!)).status).toBe(200);
  });

  it('refuses to delete a team with a live key, and says why', async () => {
    await teamRow().getByTestId('team-delete').click();
    await byTestId('team-delete-confirm').click();
    await byTestId('team-delete-error').waitFor();
    expect(await byTestId('team-delete-error').textContent()).toMatch(/revoke them/);
    expect(browser.problems).toEqual([]);
  });
});
