/**
 * The documentation's examples against a running gateway, so that no page drifts from the code:
 * every fenced block of docs/ and of the root README that a `<!-- example: run -->` comment
 * precedes is run (shell with bash, TypeScript and JavaScript with tsx) with `GATEWAY_URL` (the
 * edge's origin), `GATEWAY_KEY` (an API key) and `GATEWAY_ADMIN_TOKEN` (the admin API's token) naming
 * a cluster started for the test. Each must
 * exit 0 and, where its marker says `<!-- example: run, prints: TEXT -->`, print TEXT.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './cluster.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Where TypeScript examples are written to run: inside the repository, so that their imports resolve. */
const SCRATCH = join(ROOT, '.run', 'docs-examples');

/** One runnable block of a page. */
interface Example {
  /** `docs/getting-started.md:42`: the page and the line its block starts on. */
  where: string;
  language: 'sh' | 'ts';
  code: string;
  /** What the example prints, as the page states it. */
  prints?: string;
}

const MARKER = /<!-- example: run(?:, prints: (.+?))? -->\n```([a-z]+)\n([\s\S]*?)\n```/g;

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
      const language = match[2]!;
      const line = text.slice(0, match.index).split('\n').length + 1;
      const where = `${relative(ROOT, file)}:${line}`;
      const normalized =
        language === 'sh' || language === 'bash' ? 'sh' : language === 'ts' || language === 'js' || language === 'typescript' ? 'ts' : undefined;
      if (!normalized) throw new Error(`${where}: a runnable example in ${language}, which this test cannot run`);
      found.push({ where, language: normalized, code: match[3]!, ...(match[1] ? { prints: match[1] } : {}) });
    }
  }
  return found;
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
    execFile(command, args, { cwd: ROOT, env, timeout: 90_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const ALL = examples();

describe('the documentation examples', () => {
  let cluster: Cluster;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    // The admin API on, with a token of the cluster's own, as scripts/start.sh turns it on.
    const adminToken = randomBytes(32).toString('base64url');
    cluster = await startCluster({ plan: 'pro', env: { EDGE_ADMIN_TOKEN: adminToken } });
    env = { ...process.env, GATEWAY_URL: cluster.baseUrl.replace(/\/v1$/, ''), GATEWAY_KEY: cluster.apiKey, GATEWAY_ADMIN_TOKEN: adminToken };
    // The SDKs' own variables are the page's to set: none leaks in from the developer's shell.
    for (const name of ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN']) delete env[name];
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it("include the quick start's path (an auto completion, an embedding), code examples and the README's", () => {
    const quickStart = ALL.filter((example) => example.where.startsWith('docs/getting-started.md'));
    expect(quickStart.some((example) => example.code.includes('"model":"auto"'))).toBe(true);
    expect(quickStart.some((example) => example.code.includes('/v1/embeddings'))).toBe(true);
    expect(ALL.filter((example) => example.language === 'ts').length).toBeGreaterThanOrEqual(5);
    expect(ALL.some((example) => example.where.startsWith('README.md'))).toBe(true);
  });

  // The timeout is a wait (tsx and a client starting on a loaded machine), not an assertion.
  it.each(ALL.map((example, index) => [example.where, example, index] as const))(
    '%s runs and prints what the page says',
    async (_where, example, index) => {
      const result = await run(example, env, index);
      const output = `exit ${result.code}\n--- stdout\n${result.stdout.slice(0, 4000)}\n--- stderr\n${result.stderr.slice(0, 4000)}`;
      expect(result.code, output).toBe(0);
      if (example.prints !== undefined) expect(result.stdout, output).toContain(example.prints);
    },
    120_000,
  );
});
