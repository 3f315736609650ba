/**
 * The web console in a real browser (Debian's Chromium, driven by playwright-core) against the
 * running cluster, the way an operator uses it: log in with the admin token (a wrong one is
 * refused), create a key and read its secret from the one-time box, spend with it through the
 * `openai` client, find that spend on Usage and the request on Requests, see the simulated model
 * available on Models, create a viewer admin token on Admin tokens and log in with it (it sees the
 * usage and the audit trail but no button that changes a key), then as the admin again revoke the
 * key and find it refused. Throughout: the console's responses
 * carry its Content-Security-Policy, the page logs no error and no CSP violation, and the token
 * lives in sessionStorage only. A screenshot of each page goes to test-results/console/.
 *
 * The steps share one browser page and depend on each other in order.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startCluster, type Cluster } from './cluster.js';
import { consoleClusterEnv } from './console-browser.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ADMIN_TOKEN = `admin-${randomBytes(24).toString('hex')}`;
const SCREENSHOTS = fileURLToPath(new URL('../../test-results/console/', import.meta.url));
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const MODEL = 'sim-mini';

/**
 * What the scripts run in the page use of the browser's globals: this project's tsconfig has no
 * DOM types, and a `lib: dom` here would change the types of every other test.
 */
interface PageGlobals {
  document: {
    cookie: string;
    addEventListener(type: 'securitypolicyviolation', listener: (event: { violatedDirective: string; blockedURI: string }) => void): void;
  };
  sessionStorage: { readonly length: number; key(index: number): string | null; getItem(name: string): string | null };
  localStorage: PageGlobals['sessionStorage'];
  console: { error(message: string): void };
}

let cluster: Cluster;
let origin: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Console errors, uncaught page errors and CSP violations, each with the step it happened in. */
const problems: string[] = [];
/** The console's own responses (the page, its script and stylesheet) and their CSP header. */
const consoleResponses: Array<{ url: string; status: number; csp: string | undefined }> = [];
/** While true, the browser's report of a 401 from the admin API is expected (a wrong token). */
let expectingRefusal = false;

/** The key the flow creates, and its secret read from the page. */
let keyId: string | undefined;
let secret: string | undefined;
let requestId: string | null = null;
/** The viewer admin token the flow creates. */
let viewerSecret: string | undefined;

const byTestId = (id: string) => page.getByTestId(id);
/** Waits until a page of the console has loaded its data. */
const pageReady = (name: string) => page.locator(`[data-testid="page-${name}"][data-state="ready"]`).waitFor({ timeout: 30_000 });
const screenshot = (name: string) => page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
const keyRow = () => page.locator(`[data-testid="key-row"][data-key-id="${keyId}"]`);
const client = (apiKey: string) => new OpenAI({ baseURL: cluster.baseUrl, apiKey, maxRetries: 0 });

beforeAll(async () => {
  // A missing browser is a failure with the fix in it, never a silent skip.
  if (!existsSync(CHROMIUM))
    throw new Error(`No Chromium at ${CHROMIUM}: install it with \`apt-get install chromium\` (or set CHROMIUM_PATH to a Chromium executable).`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  cluster = await startCluster({
    env: {
      ...consoleClusterEnv(),
      EDGE_ADMIN_TOKEN: ADMIN_TOKEN,
      EDGE_ADMIN_TOKENS_ENABLED: 'true',
      // Health reports of this cluster's models only: another cluster's breakers never mark sim-mini down here.
      DEPLOYMENT_HEALTH_SUBJECT: `health.v1.deployment.test-${randomBytes(4).toString('hex')}`,
    },
  });
  origin = new URL(cluster.baseUrl).origin;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  // Well inside vitest's test timeout, so a missing element fails with Playwright's own message.
  context.setDefaultTimeout(30_000);
  // Runs before the console's own script, outside its CSP: a violation becomes a console error.
  await context.addInitScript(() => {
    const { document, console } = globalThis as unknown as PageGlobals;
    document.addEventListener('securitypolicyviolation', (event) => {
      console.error(`CSP violation: ${event.violatedDirective} blocked ${event.blockedURI || 'inline code'}`);
    });
  });
  page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    if (expectingRefusal && /status of 401/.test(text) && message.location().url.includes('/admin/v1/')) return;
    problems.push(`console error: ${text} (${message.location().url})`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('response', (response) => {
    if (!new URL(response.url()).pathname.startsWith('/console')) return;
    consoleResponses.push({ url: response.url(), status: response.status(), csp: response.headers()['content-security-policy'] });
  });
});

afterAll(async () => {
  await browser?.close();
  await cluster?.stop();
});

describe('the web console', () => {
  it('serves the page, its script and its stylesheet without a token, under a strict CSP', async () => {
    for (const path of ['/console', '/console/app.js', '/console/app.css']) {
      const response = await fetch(`${origin}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-security-policy'), path).toBe(CSP);
      expect(response.headers.get('x-frame-options'), path).toBe('DENY');
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
      await response.arrayBuffer();
    }
    const html = await (await fetch(`${origin}/console`)).text();
    expect(html).not.toContain(ADMIN_TOKEN);
    expect(html).not.toContain(cluster.apiKey);
  });

  it('refuses a wrong admin token, then logs in and keeps the token in sessionStorage only', async () => {
    await page.goto(`${origin}/console`);
    expectingRefusal = true;
    await byTestId('login-token').fill(`wrong-${randomBytes(24).toString('hex')}`);
    await byTestId('login-submit').click();
    await byTestId('login-error').waitFor();
    expect(await byTestId('login-error').textContent()).toContain('401');
    await screenshot('login');

    await byTestId('login-token').fill(ADMIN_TOKEN);
    await byTestId('login-submit').click();
    await pageReady('keys');
    expectingRefusal = false;
    expect(await byTestId('error-banner').count()).toBe(0);

    const stored = await page.evaluate(() => {
      const { document, localStorage, sessionStorage } = globalThis as unknown as PageGlobals;
      const values = (storage: PageGlobals['sessionStorage']) => Array.from({ length: storage.length }, (_, index) => storage.getItem(storage.key(index)!));
      return { session: values(sessionStorage), local: values(localStorage), cookie: document.cookie };
    });
    expect(stored.session).toContain(ADMIN_TOKEN);
    expect(stored.local.join('\n')).not.toContain(ADMIN_TOKEN);
    expect(stored.cookie).toBe('');
    expect(await context.cookies()).toEqual([]);
  });

  it('creates a key and shows its secret once; the secret answers a completion', async () => {
    const name = `console-${randomBytes(3).toString('hex')}`;
    await byTestId('create-key-name').fill(name);
    await byTestId('create-key-plan').selectOption('pro');
    await byTestId('create-key-daily').fill('25');
    await byTestId('create-key-models').fill(`${MODEL}, other-*`);
    await byTestId('create-key-submit').click();
    await byTestId('new-key-box').waitFor({ timeout: 30_000 });
    secret = (await byTestId('new-key-secret').textContent())?.trim();
    keyId = (await byTestId('new-key-id').textContent())?.trim();
    expect(secret).toMatch(/^br-\S+$/);
    expect(keyId).toMatch(/^key_\w+$/);
    expect(await byTestId('new-key-box').textContent()).toMatch(/will not see it again/);
    await keyRow().waitFor();
    expect(await keyRow().getByTestId('key-plan').textContent()).toBe('pro');
    expect(await keyRow().getByTestId('key-models').textContent()).toBe(`${MODEL}, other-*`);
    await screenshot('keys');

    const { data: completion, response } = await client(secret!)
      .chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hello from the console test.' }] })
      .withResponse();
    expect(completion.choices[0]!.message.content).toBeTruthy();
    requestId = response.headers.get('x-request-id');

    // Gone once dismissed, and not in the page after a reload: the secret is shown this one time.
    await byTestId('new-key-dismiss').click();
    await page.reload();
    await pageReady('keys');
    expect(await page.content()).not.toContain(secret!);
  });

  it("shows the key's spend on Usage, in the totals and the chart", async () => {
    expect(keyId, 'the key from the step before').toBeDefined();
    await byTestId('nav-usage').click();
    await pageReady('usage');
    // Only this key: the cluster's Redis may hold other test runs' keys, and a chart draws the
    // largest spenders only. The choice is in the page's address, so it survives the reloads.
    await byTestId('usage-key-filter').selectOption(keyId!);
    const cost = page.locator(`[data-testid="usage-key-row"][data-group-id="${keyId}"] [data-testid="usage-cost"]`);
    // Metering records the completion a moment after its answer: reload until it shows.
    const deadline = Date.now() + 30_000;
    for (;;) {
      await pageReady('usage');
      if ((await cost.count()) > 0 && Number(await cost.getAttribute('data-cost-usd')) > 0) break;
      if (Date.now() > deadline) throw new Error(`no spend for ${keyId} on the Usage page within 30 s:\n${await page.locator('main').textContent()}`);
      await page.waitForTimeout(1_000);
      await page.reload();
    }
    const chart = byTestId('chart-spend-by-key');
    expect(await chart.getAttribute('data-series-ids')).toBe(keyId);
    expect(Number(await chart.getAttribute('data-total-usd'))).toBeGreaterThan(0);
    expect(await chart.locator('canvas').count()).toBeGreaterThan(0);
    expect((await byTestId('chart-spend-by-model').getAttribute('data-series-ids'))!.split(' ')).toContain(MODEL);
    expect(await page.locator(`[data-testid="usage-model-row"][data-group-id="${MODEL}"]`).count()).toBe(1);
    await screenshot('usage');
  });

  it('lists the request on Requests', async () => {
    expect(keyId, 'the key from the steps before').toBeDefined();
    await byTestId('nav-requests').click();
    await pageReady('requests');
    await byTestId('requests-key-filter').selectOption(keyId!);
    const rows = page.locator(`[data-testid="request-row"][data-key-id="${keyId}"]`);
    const deadline = Date.now() + 30_000;
    while ((await rows.count()) === 0) {
      if (Date.now() > deadline) throw new Error(`no request of ${keyId} on the Requests page within 30 s`);
      await page.waitForTimeout(500);
      await byTestId('requests-refresh').click();
      await pageReady('requests');
    }
    expect(await rows.count()).toBe(1);
    expect(await rows.getByTestId('request-requested-model').textContent()).toBe(MODEL);
    expect(await rows.getByTestId('request-outcome').textContent()).toBe('completed');
    expect(Number(await rows.getByTestId('request-cost').getAttribute('data-cost-usd'))).toBeGreaterThan(0);
    if (requestId) expect(await rows.getAttribute('data-request-id')).toBe(requestId);
    await screenshot('requests');
  });

  it(`shows ${MODEL} available on Models`, async () => {
    await byTestId('nav-models').click();
    await pageReady('models');
    const row = page.locator(`[data-testid="model-row"][data-model-id="${MODEL}"]`);
    expect(await row.count()).toBe(1);
    expect(await row.getByTestId('model-available').textContent()).toBe('yes');
    await screenshot('models');
  });

  it('creates a viewer admin token on Admin tokens and shows its secret once', async () => {
    await byTestId('nav-admin-tokens').click();
    await pageReady('admin-tokens');
    await byTestId('create-admin-token-name').fill('console-viewer');
    await byTestId('create-admin-token-role').selectOption('viewer');
    await byTestId('create-admin-token-submit').click();
    await byTestId('new-admin-token-box').waitFor({ timeout: 30_000 });
    viewerSecret = (await byTestId('new-admin-token-secret').textContent())?.trim();
    expect(viewerSecret).toMatch(/^bra-[A-Za-z0-9]{40}$/);
    await screenshot('admin-tokens');
    await byTestId('new-admin-token-dismiss').click();
  });

  it("a viewer sees the key's usage and the audit trail, and no button that changes a key", async () => {
    expect(viewerSecret, 'the viewer token from the step before').toBeDefined();
    await byTestId('logout').click();
    await byTestId('login-token').fill(viewerSecret!);
    await byTestId('login-submit').click();
    // The address still names Admin tokens, which a viewer may not see: the console shows Keys.
    await pageReady('keys');
    await page.locator('[data-testid="whoami"][data-role="viewer"]').waitFor();
    await keyRow().waitFor();
    expect(await byTestId('create-key-form').count()).toBe(0);
    expect(await page.locator('[data-testid="key-edit"], [data-testid="key-revoke"]').count()).toBe(0);
    expect(await byTestId('nav-admin-tokens').count()).toBe(0);
    await screenshot('keys-viewer');

    await byTestId('nav-teams').click();
    await pageReady('teams');
    await byTestId('teams-read-only').waitFor();
    expect(await byTestId('create-team-form').count()).toBe(0);
    expect(await page.locator('[data-testid="team-edit"], [data-testid="team-delete"]').count()).toBe(0);

    await byTestId('nav-usage').click();
    await pageReady('usage');
    await byTestId('usage-key-filter').selectOption(keyId!);
    await pageReady('usage');
    const cost = page.locator(`[data-testid="usage-key-row"][data-group-id="${keyId}"] [data-testid="usage-cost"]`);
    await expect.poll(async () => Number((await cost.count()) > 0 ? await cost.getAttribute('data-cost-usd') : 0), { timeout: 30_000 }).toBeGreaterThan(0);

    await byTestId('nav-audit').click();
    await pageReady('audit');
    // Filtered by the key: the other suites' clusters share this Redis, and so the trail's newest page.
    await byTestId('audit-target').fill(keyId!);
    await byTestId('audit-apply').click();
    const created = page.locator(`[data-testid="audit-row"][data-action="key.create"][data-target-id="${keyId}"]`);
    await created.first().waitFor();
    await pageReady('audit');
    expect(await created.count()).toBe(1);
    // The filter shows that key's entries only.
    expect(await page.locator(`[data-testid="audit-row"]:not([data-target-id="${keyId}"])`).count()).toBe(0);
    expect(await created.getByTestId('audit-actor').textContent()).toContain('static-token');
    await screenshot('audit');

    await byTestId('logout').click();
    await byTestId('login-token').fill(ADMIN_TOKEN);
    await byTestId('login-submit').click();
    await byTestId('nav-keys').click();
    await pageReady('keys');
  });

  it('revokes the key after a confirmation; its next completion is refused with 401', async () => {
    expect(secret, 'the key from the steps before').toBeDefined();
    await byTestId('nav-keys').click();
    await pageReady('keys');
    await keyRow().getByTestId('key-revoke').click();
    await byTestId('key-revoke-confirm').click();
    await expect.poll(() => keyRow().getByTestId('key-revoked').textContent(), { timeout: 30_000 }).toBe('revoked');

    const refused = await client(secret!)
      .chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Still there?' }] })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((refused as InstanceType<typeof OpenAI.AuthenticationError>).status).toBe(401);
  });

  it('logged no console error, page error or CSP violation, and served every console file under the CSP', () => {
    expect(problems).toEqual([]);
    const paths = new Set(consoleResponses.map((response) => new URL(response.url).pathname));
    // The login page asks whether to offer single sign-on (off here).
    expect(paths).toEqual(new Set(['/console', '/console/app.js', '/console/app.css', '/console/sso/config']));
    for (const response of consoleResponses) expect(response.csp, response.url).toBe(CSP);
  });
});
