/**
 * The web console in a real browser for the end-to-end tests: Debian's Chromium (or CHROMIUM_PATH)
 * driven by playwright-core, one page whose console errors and uncaught errors are collected as
 * problems a test then asserts are none, and the steps every console test takes (log in with a
 * token, wait for a page of the console to have loaded its data).
 */
import { existsSync } from 'node:fs';
import { ownAuthPrefix } from './cluster.js';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type ConsoleMessage, type Locator, type Page } from 'playwright-core';

/** The Chromium executable the tests drive. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** How the browser is opened. */
export interface ConsoleBrowserOptions {
  /** The browser context's options beyond the default viewport of 1400 × 900. */
  readonly context?: BrowserContextOptions;
  /** True for a console error the test expects (a refusal it provokes): it is not a problem. */
  readonly expected?: (message: ConsoleMessage) => boolean;
}

/** A browser with one page on the console. */
export interface ConsoleBrowser {
  readonly browser: Browser;
  readonly context: BrowserContext;
  readonly page: Page;
  /** Console errors and uncaught page errors so far, as lines for a failure's message. */
  readonly problems: string[];
  /** The element with this `data-testid`. */
  byTestId(id: string): Locator;
  /** Waits until the console's page `name` (`keys`, `requests`…) has loaded its data. */
  pageReady(name: string, timeoutMs?: number): Promise<void>;
  /** Waits until the console's page `name` has loaded its data or shown why not; resolves which (`ready`, `error`). */
  pageSettled(name: string, timeoutMs?: number): Promise<string>;
  /** Opens `address` (the console, or one of its pages) and logs in with `token`. */
  logIn(address: string, token: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * What the cluster of a console test runs with besides its own settings: keys, teams and audit
 * trail under a prefix of its own, so that its pages list this cluster's, not every earlier test's
 * on the shared Redis; and a 30 s deadline for the edge's calls to auth and the router instead of
 * the production 2 s, since beside a browser and other clusters on a loaded machine an admin call
 * can take longer, and its 504 would fail a page load the test is not about (faults.e2e.test.ts
 * holds the deadline's 503s and 504s).
 */
export function consoleClusterEnv(): Record<string, string> {
  return { AUTH_REDIS_PREFIX: ownAuthPrefix(), EDGE_CONTROL_DEADLINE_MS: '30000' };
}

/** Fails with the fix in the message when there is no Chromium: never a silent skip. */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM))
    throw new Error(`No Chromium at ${CHROMIUM}: install it with \`apt-get install chromium\` (or set CHROMIUM_PATH to a Chromium executable).`);
}

/** Waits for a page of the console to be ready; a page that failed instead says why (its state and error banner). */
async function pageReady(page: Page, name: string, timeoutMs: number): Promise<void> {
  const section = page.locator(`[data-testid="page-${name}"]`);
  try {
    await section.and(page.locator('[data-state="ready"]')).waitFor({ timeout: timeoutMs });
  } catch (error) {
    const state = await section.getAttribute('data-state').catch(() => 'absent');
    const banner = await page
      .locator('[role="alert"]')
      .allTextContents()
      .catch(() => []);
    throw new Error(`the ${name} page is ${state}: ${banner.join(' | ') || (error as Error).message}`);
  }
}

/** Launches Chromium with one page, its problems collected. */
export async function openConsoleBrowser(options: ConsoleBrowserOptions = {}): Promise<ConsoleBrowser> {
  requireChromium();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, ...options.context });
  // Well inside vitest's test timeout, so a missing element fails with Playwright's own message.
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && !options.expected?.(message)) problems.push(`console error: ${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  const byTestId = (id: string) => page.getByTestId(id);
  return {
    browser,
    context,
    page,
    problems,
    byTestId,
    pageReady: (name, timeoutMs = 30_000) => pageReady(page, name, timeoutMs),
    async pageSettled(name, timeoutMs = 30_000) {
      const section = page.locator(`[data-testid="page-${name}"]`);
      await section.and(page.locator('[data-state="ready"], [data-state="error"]')).waitFor({ timeout: timeoutMs });
      return (await section.getAttribute('data-state')) ?? 'absent';
    },
    async logIn(address, token) {
      await page.goto(address);
      await byTestId('login-token').fill(token);
      await byTestId('login-submit').click();
    },
    close: () => browser.close(),
  };
}
