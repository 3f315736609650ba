/**
 * Single sign-on to the web console in a real browser (Debian's Chromium, driven by
 * playwright-core) against a real OpenID Connect provider on loopback (`oidc-provider`, a
 * certified OP: PKCE required, its development login and consent pages) and the running cluster,
 * which has no static admin token at all: SSO alone opens the admin API.
 *
 * An admin signs in with the console's SSO button, through the provider's login and consent
 * pages, comes back to the console logged in (the session in sessionStorage, gone from the
 * address, no cookie left), creates a key and spends with it. A user whose groups name no role of
 * the gateway is refused with a page and gets no session. A viewer sees the key's spend on Usage
 * but no button that changes a key, and the admin API answers 403 to a key creation with the
 * viewer's session. No page of the edge logs an error or a CSP violation.
 *
 * The steps share the cluster and the provider and depend on each other in order.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import Provider, { type Configuration } from 'oidc-provider';
import OpenAI from 'openai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startCluster, type Cluster } from './cluster.js';
import { consoleClusterEnv } from './console-browser.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SCREENSHOTS = fileURLToPath(new URL('../../test-results/console-sso/', import.meta.url));
const CLIENT_ID = 'gateway-console';
const CLIENT_SECRET = `client-secret-${randomBytes(16).toString('hex')}`;
const MODEL = 'sim-mini';

/** The provider's users: their `groups` claim carries the role. */
const ACCOUNTS: Record<string, { email: string; groups: string[] }> = {
  ada: { email: 'ada@example.com', groups: ['staff', 'gateway-admin'] },
  vic: { email: 'vic@example.com', groups: ['gateway-viewer'] },
  nobody: { email: 'nobody@example.com', groups: ['staff'] },
};

/** The browser globals the scripts run in a page use (this project's tsconfig has no DOM types). */
interface PageGlobals {
  document: {
    cookie: string;
    addEventListener(type: 'securitypolicyviolation', listener: (event: { violatedDirective: string; blockedURI: string }) => void): void;
  };
  location: { href: string };
  sessionStorage: { readonly length: number; key(index: number): string | null; getItem(name: string): string | null };
  console: { error(message: string): void };
}

let cluster: Cluster;
let origin: string;
let issuer: string;
let providerServer: Server;
let browser: Browser;
/** Console errors, page errors and CSP violations on the edge's pages (the provider's own pages aside). */
const problems: string[] = [];
/** The key the admin creates, and its secret. */
let keyId: string | undefined;

/** A real OpenID Connect provider with the gateway as its one client, PKCE required. */
function providerConfiguration(redirectUri: string): Configuration {
  const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  return {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    jwks: { keys: [{ ...signingKey, kid: 'e2e', alg: 'RS256', use: 'sig' }] as never },
    features: { devInteractions: { enabled: true } },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    findAccount: async (_context, id) => {
      const account = ACCOUNTS[id];
      if (!account) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...account }) };
    },
  };
}

/** A fresh browser context (no provider session) with its page, watching the edge's pages for problems. */
async function newPage(who: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  context.setDefaultTimeout(30_000);
  await context.addInitScript(() => {
    const { document, console } = globalThis as unknown as PageGlobals;
    document.addEventListener('securitypolicyviolation', (event) => {
      console.error(`CSP violation: ${event.violatedDirective} blocked ${event.blockedURI || 'inline code'}`);
    });
  });
  const page = await context.newPage();
  const onEdge = () => page.url().startsWith(origin);
  page.on('console', (message) => {
    // The refusal page of a user without a role is a 403, which the browser reports as an error.
    const refusal = who === 'nobody' && /status of 403/.test(message.text()) && message.location().url.includes('/console/sso/callback');
    if (message.type() === 'error' && onEdge() && !refusal) problems.push(`${who}: console error: ${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => {
    if (onEdge()) problems.push(`${who}: page error: ${error.message}`);
  });
  return { context, page };
}

/** Signs `login` in from the console's SSO button, through the provider's login and consent pages. */
async function signInWithSso(page: Page, login: string): Promise<void> {
  await page.goto(`${origin}/console`);
  await page.getByTestId('login-sso').click();
  await page.waitForURL((url) => url.origin === issuer);
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
  // The consent page: the gateway asks for the user's email and groups.
  await page.locator('button[type="submit"]', { hasText: 'Continue' }).click();
  await page.waitForURL((url) => url.origin === origin);
}

/** What the page keeps: its sessionStorage's values, its cookies as script sees them, its address. */
async function kept(page: Page): Promise<{ session: string[]; cookie: string; href: string }> {
  return page.evaluate(() => {
    const { document, location, sessionStorage } = globalThis as unknown as PageGlobals;
    const session = Array.from({ length: sessionStorage.length }, (_, index) => sessionStorage.getItem(sessionStorage.key(index)!) ?? '');
    return { session, cookie: document.cookie, href: location.href };
  });
}

const pageReady = (page: Page, name: string) => page.locator(`[data-testid="page-${name}"][data-state="ready"]`).waitFor({ timeout: 30_000 });

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`No Chromium at ${CHROMIUM}: install it with \`apt-get install chromium\` (or set CHROMIUM_PATH to a Chromium executable).`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  const providerPort = await freePort();
  issuer = `http://127.0.0.1:${providerPort}`;
  // The provider starts only once the edge's address (its redirect URI) is known, after the edge:
  // an issuer that does not answer while the edge starts must not turn SSO off (the edge answers
  // `enabled: true` from its settings and discovers the provider at the first sign-in, trying
  // again at the next one after a failure), and these steps prove it. The provider's port is
  // reserved for this process (freePort) meanwhile, so nothing else takes it.
  cluster = await startCluster({
    env: {
      ...consoleClusterEnv(),
      EDGE_ADMIN_TOKEN: '',
      EDGE_OIDC_ISSUER: issuer,
      EDGE_OIDC_CLIENT_ID: CLIENT_ID,
      EDGE_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      EDGE_OIDC_SCOPES: 'openid email groups',
      EDGE_OIDC_ROLES_CLAIM: 'groups',
      EDGE_OIDC_ADMIN_VALUES: 'gateway-admin',
      EDGE_OIDC_VIEWER_VALUES: 'gateway-viewer',
      EDGE_SESSION_SECRET: randomBytes(32).toString('hex'),
      DEPLOYMENT_HEALTH_SUBJECT: `health.v1.deployment.test-${randomBytes(4).toString('hex')}`,
    },
  });
  origin = new URL(cluster.baseUrl).origin;
  const provider = new Provider(issuer, providerConfiguration(`${origin}/console/sso/callback`));
  providerServer = provider.listen(providerPort, '127.0.0.1');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (providerServer ? providerServer.close(resolve) : resolve(undefined)));
  await cluster?.stop();
});

describe('single sign-on to the web console', () => {
  it('offers "Sign in with SSO" beside the token box', async () => {
    const config = await fetch(`${origin}/console/sso/config`);
    expect(await config.json()).toEqual({ enabled: true, login_url: '/console/sso/login' });
    const { context, page } = await newPage('anonymous');
    await page.goto(`${origin}/console`);
    await page.getByTestId('login-sso').waitFor();
    expect(await page.getByTestId('login-token').count()).toBe(1);
    await page.screenshot({ path: `${SCREENSHOTS}login.png` });
    await context.close();
  });

  it('signs an admin in through the provider; the session lives in sessionStorage only; the admin creates a key', async () => {
    const { context, page } = await newPage('ada');
    await signInWithSso(page, 'ada');
    await pageReady(page, 'keys');
    expect(await page.getByTestId('whoami').getAttribute('data-role')).toBe('admin');
    expect(await page.getByTestId('whoami').textContent()).toContain('ada@example.com');
    const state = await kept(page);
    expect(state.href).toBe(`${origin}/console/#/keys`);
    expect(state.session.filter((value) => value.startsWith('brs-'))).toHaveLength(1);
    expect(state.cookie).toBe('');
    // The flow's cookie was deleted by the callback: no cookie of the edge's is left.
    expect((await context.cookies(origin)).filter((cookie) => new URL(origin).hostname === cookie.domain && cookie.path.startsWith('/console'))).toEqual([]);

    await page.getByTestId('create-key-name').fill(`sso-${randomBytes(3).toString('hex')}`);
    await page.getByTestId('create-key-submit').click();
    await page.getByTestId('new-key-box').waitFor({ timeout: 30_000 });
    keyId = (await page.getByTestId('new-key-id').textContent())?.trim();
    const secret = (await page.getByTestId('new-key-secret').textContent())?.trim();
    expect(keyId).toMatch(/^key_\w+$/);
    const completion = await new OpenAI({ baseURL: cluster.baseUrl, apiKey: secret!, maxRetries: 0 }).chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Hello from the SSO test.' }],
    });
    expect(completion.choices[0]!.message.content).toBeTruthy();
    await page.screenshot({ path: `${SCREENSHOTS}admin-keys.png`, fullPage: true });

    await page.getByTestId('logout').click();
    await page.getByTestId('page-login').waitFor();
    expect((await kept(page)).session).toEqual([]);
    await context.close();
  });

  it('refuses a user whose groups name no role of the gateway, with a page and no session', async () => {
    const { context, page } = await newPage('nobody');
    await signInWithSso(page, 'nobody');
    const refusal = page.getByTestId('sso-refusal');
    await refusal.waitFor();
    expect(await refusal.getAttribute('data-code')).toBe('sso_role_missing');
    expect(await refusal.textContent()).toContain('not allowed');
    expect(page.url()).not.toContain('brs-');
    expect((await kept(page)).session).toEqual([]);
    await page.screenshot({ path: `${SCREENSHOTS}refused.png` });
    await context.close();
  });

  it("shows a viewer the key's usage but no button that changes a key; the admin API refuses the viewer's key creation", async () => {
    expect(keyId, 'the key from the step before').toBeDefined();
    const { context, page } = await newPage('vic');
    await signInWithSso(page, 'vic');
    await pageReady(page, 'keys');
    expect(await page.getByTestId('whoami').getAttribute('data-role')).toBe('viewer');
    await page.locator(`[data-testid="key-row"][data-key-id="${keyId}"]`).waitFor();
    expect(await page.getByTestId('create-key-form').count()).toBe(0);
    expect(await page.getByTestId('create-key-submit').count()).toBe(0);
    expect(await page.getByTestId('key-edit').count()).toBe(0);
    expect(await page.getByTestId('key-revoke').count()).toBe(0);
    await page.getByTestId('keys-read-only').waitFor();
    await page.screenshot({ path: `${SCREENSHOTS}viewer-keys.png`, fullPage: true });

    await page.getByTestId('nav-usage').click();
    await pageReady(page, 'usage');
    await page.getByTestId('usage-key-filter').selectOption(keyId!);
    const cost = page.locator(`[data-testid="usage-key-row"][data-group-id="${keyId}"] [data-testid="usage-cost"]`);
    const deadline = Date.now() + 30_000;
    for (;;) {
      await pageReady(page, 'usage');
      if ((await cost.count()) > 0 && Number(await cost.getAttribute('data-cost-usd')) > 0) break;
      if (Date.now() > deadline) throw new Error(`no spend for ${keyId} on the viewer's Usage page within 30 s`);
      await page.waitForTimeout(1_000);
      await page.reload();
    }
    await page.screenshot({ path: `${SCREENSHOTS}viewer-usage.png`, fullPage: true });

    const token = (await kept(page)).session.find((value) => value.startsWith('brs-'))!;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const creation = await fetch(`${origin}/admin/v1/keys`, { method: 'POST', headers, body: JSON.stringify({ plan: 'pro' }) });
    expect(creation.status).toBe(403);
    expect(((await creation.json()) as { error: { code: string } }).error.code).toBe('admin_role_required');
    const revocation = await fetch(`${origin}/admin/v1/keys/${keyId}`, { method: 'DELETE', headers });
    expect(revocation.status).toBe(403);
    const list = await fetch(`${origin}/admin/v1/keys`, { headers });
    expect(list.status).toBe(200);
    await list.arrayBuffer();
    await context.close();
  });

  it('logged no console error, page error or CSP violation on the edge', () => {
    expect(problems).toEqual([]);
  });
});
