/**
 * The documentation's examples against a running gateway, so that no page drifts from the code:
 * every fenced block of docs/ and of the root README that a `<!-- example: run -->` comment
 * precedes is run (shell with bash, TypeScript and JavaScript with tsx) with `GATEWAY_URL` (the
 * edge's origin), `GATEWAY_KEY` (an API key) and `GATEWAY_ADMIN_TOKEN` (the admin API's token) naming
 * a cluster started for the test (with the request log, as `scripts/start.sh` starts it beside
 * PostgreSQL, and the response cache). Each must exit 0 and, where its marker says `<!-- example: run, prints: TEXT -->`,
 * print TEXT. A block that `<!-- example: console, shows: MODEL -->` precedes holds the console's
 * address as a page gives it: the address is opened in Chromium (its origin the started gateway's),
 * the console logged in with the admin token, and its Requests page must list, newest first, a
 * completed request for MODEL: the one the page's example before it made.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@gateway/testing';
import { startCluster, type Cluster } from './cluster.js';
import { consoleClusterEnv, openConsoleBrowser, type ConsoleBrowser } from './console-browser.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Where TypeScript examples are written to run: inside the repository, so that their imports resolve. */
const SCRATCH = join(ROOT, '.run', 'docs-examples');

/** One runnable block of a page. */
interface Example {
  /** `docs/getting-started.md:42`: the page and the line its block starts on. */
  where: string;
  /** `console`: the block is the console's address, opened in a browser. */
  language: 'sh' | 'ts' | 'console';
  code: string;
  /** What the example prints, or (console) the model of the newest request, as the page states it. */
  prints?: string;
}

const MARKER = /<!-- example: (run|console)(?:, (?:prints|shows): (.+?))? -->\n```([a-z]+)\n([\s\S]*?)\n```/g;
/** The gateway's address in the pages, which the console's examples name. */
const PAGES_ORIGIN = 'http://127.0.0.1:8080';

/** The markdown files of docs/ (not VitePress's own folder), and the root README. */
function pages(): string[] {
  const files = [join(ROOT, 'README.md')];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  walk(join(ROOT, 'docs'));
  return files;
}

/** Every marked block of the pages; an unknown language is an error of the page, not a skip. */
function examples(): Example[] {
  const found: Example[] = [];
  for (const file of pages()) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(MARKER)) {
      const [, kind, prints, language, code] = match as unknown as [string, string, string | undefined, string, string];
      const line = text.slice(0, match.index).split('\n').length + 1;
      const where = `${relative(ROOT, file)}:${line}`;
      const normalized = kind === 'console' ? consoleExample(where, language, code, prints) : runnableLanguage(language);
      if (!normalized) throw new Error(`${where}: a runnable example in ${language}, which this test cannot run`);
      found.push({ where, language: normalized, code, ...(prints ? { prints } : {}) });
    }
  }
  return found;
}

/** The language a runnable block is run as, if this test can run it. */
function runnableLanguage(language: string): Example['language'] | undefined {
  if (language === 'sh' || language === 'bash') return 'sh';
  if (language === 'ts' || language === 'js' || language === 'typescript') return 'ts';
  return undefined;
}

/** Checks a console example's block: a `text` block of the console's address, and the model it shows. */
function consoleExample(where: string, language: string, code: string, shows: string | undefined): 'console' {
  if (language !== 'text' || !code.trim().startsWith(`${PAGES_ORIGIN}/console`) || !shows)
    throw new Error(`${where}: a console example is a text block of ${PAGES_ORIGIN}/console… with \`shows: MODEL\``);
  return 'console';
}

/**
 * Opens the console's address (on the started gateway) in the browser, logs in with the admin
 * token and waits until the newest request on the Requests page is a completed one for `model`.
 */
async function showConsole(browser: ConsoleBrowser, example: Example, env: NodeJS.ProcessEnv): Promise<void> {
  const { page, byTestId } = browser;
  await browser.logIn(example.code.trim().replace(PAGES_ORIGIN, env.GATEWAY_URL!), env.GATEWAY_ADMIN_TOKEN!);
  await byTestId('nav-requests').click();
  const newest = page.locator('[data-testid="request-row"]').first();
  const seen = async () => ((await newest.count()) > 0 ? newest.getByTestId('request-requested-model').textContent() : null);
  // The request log writes a request a moment after its answer: refresh until it shows.
  const deadline = Date.now() + 30_000;
  for (;;) {
    await browser.pageReady('requests');
    if ((await seen()) === example.prints) break;
    if (Date.now() > deadline) throw new Error(`the Requests page's newest request is not for ${example.prints} within 30 s: ${await seen()}`);
    await page.waitForTimeout(500);
    await byTestId('requests-refresh').click();
  }
  expect(await newest.getByTestId('request-outcome').textContent()).toBe('completed');
  expect(browser.problems).toEqual([]);
}

/** Runs one example; resolves with its exit code and output. */
function run(example: Example, env: NodeJS.ProcessEnv, index: number): Promise<{ code: number; stdout: string; stderr: string }> {
  let command: string;
  let args: string[];
  if (example.language === 'sh') {
    command = 'bash';
    args = ['-e', '-o', 'pipefail', '-c', example.code];
  } else {
    mkdirSync(SCRATCH, { recursive: true });
    const file = join(SCRATCH, `example-${index}.mts`);
    writeFileSync(file, example.code);
    command = join(ROOT, 'node_modules', '.bin', 'tsx');
    args = [file];
  }
  return new Promise((resolve) => {
    const child = execFile(command, args, { cwd: ROOT, env, timeout: 90_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
    // Nothing to read, as at a terminal where no one types: `codex exec` otherwise waits for more prompt on stdin.
    child.stdin?.end();
  });
}

const ALL = examples();

describe('the documentation examples', () => {
  let cluster: Cluster;
  let database: TestDatabase;
  let browser: ConsoleBrowser | undefined;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    // The admin API on, with a token of the cluster's own, as scripts/start.sh turns it on.
    const adminToken = randomBytes(32).toString('base64url');
    database = await createTestDatabase('reqlog_docs');
    cluster = await startCluster({
      plan: 'pro',
      requestLog: { databaseUrl: database.url },
      cache: true,
      env: { ...consoleClusterEnv(), EDGE_ADMIN_TOKEN: adminToken },
    });
    env = { ...process.env, GATEWAY_URL: cluster.baseUrl.replace(/\/v1$/, ''), GATEWAY_KEY: cluster.apiKey, GATEWAY_ADMIN_TOKEN: adminToken };
    // The SDKs' own variables are the page's to set: none leaks in from the developer's shell.
    for (const name of ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN']) delete env[name];
  });

  afterAll(async () => {
    await browser?.close();
    await cluster?.stop();
    await database?.drop();
  });

  it("include the quick start's path (an auto completion, an embedding, a Codex run, the console), code examples and the README's", () => {
    const quickStart = ALL.filter((example) => example.where.startsWith('docs/getting-started.md'));
    expect(quickStart.some((example) => example.code.includes('"model":"auto"'))).toBe(true);
    expect(quickStart.some((example) => example.code.includes('/v1/embeddings'))).toBe(true);
    const codex = quickStart.findIndex((example) => example.code.includes('codex exec'));
    expect(codex).toBeGreaterThanOrEqual(0);
    expect(quickStart[codex + 1]?.language).toBe('console');
    expect(ALL.filter((example) => example.language === 'ts').length).toBeGreaterThanOrEqual(5);
    expect(ALL.some((example) => example.where.startsWith('README.md'))).toBe(true);
  });

  // The timeout is a wait (tsx and a client starting on a loaded machine), not an assertion.
  it.each(ALL.map((example, index) => [example.where, example, index] as const))(
    '%s runs and prints what the page says',
    async (_where, example, index) => {
      if (example.language === 'console') {
        browser ??= await openConsoleBrowser();
        await showConsole(browser, example, env);
        return;
      }
      const result = await run(example, env, index);
      const output = `exit ${result.code}\n--- stdout\n${result.stdout.slice(0, 4000)}\n--- stderr\n${result.stderr.slice(0, 4000)}`;
      expect(result.code, output).toBe(0);
      if (example.prints !== undefined) expect(result.stdout, output).toContain(example.prints);
    },
    120_000,
  );
});
