/**
 * The documentation site (VitePress): `pnpm docs:build` builds it into docs/.vitepress/dist and
 * fails on a dead link, `pnpm docs:dev` serves it with live reload.
 *
 * Pages link to the repository's other files (source, service READMEs, manifests) with paths
 * relative to the page, as GitHub resolves them. VitePress checks only links to its own pages, so
 * such a link is checked here instead: the file or folder it names must exist, or the build fails.
 * The root README.md's relative links are checked the same way, since it links into these pages.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitepress';

const DOCS = fileURLToPath(new URL('..', import.meta.url));
const ROOT = resolve(DOCS, '..');

/** The path a relative link of `file` names, or undefined for an anchor, an absolute path or a URL. */
function linkedPath(file: string, href: string): string | undefined {
  if (href === '' || href.startsWith('#') || href.startsWith('/') || /^[a-z][a-z0-9+.-]*:/i.test(href)) return undefined;
  return resolve(dirname(file), decodeURIComponent(href.replace(/[?#].*$/, '')));
}

/** Throws when a relative link of `file` that leaves docs/ names nothing in the repository. */
function checkRepositoryLink(file: string, href: string): boolean {
  const path = linkedPath(file, href);
  if (path === undefined || !relative(DOCS, path).startsWith('..')) return false;
  if (relative(ROOT, path).startsWith('..')) throw new Error(`${relative(ROOT, file)}: the link ${href} leaves the repository`);
  if (!existsSync(path)) throw new Error(`${relative(ROOT, file)}: dead link to ${href} (${relative(ROOT, path)} does not exist)`);
  return true;
}

/** The root README's relative links, each to a file or folder that exists. */
function checkReadmeLinks(): void {
  const readme = join(ROOT, 'README.md');
  for (const match of readFileSync(readme, 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
    const path = linkedPath(readme, match[1]!);
    if (path !== undefined && !existsSync(path)) throw new Error(`README.md: dead link to ${match[1]}`);
  }
}

checkReadmeLinks();

export default defineConfig({
  title: 'LLM gateway',
  description: "An LLM gateway for OpenAI's chat completions, the Responses API and Anthropic's Messages API",
  // The folder's own README and the runbooks' index are pages too (linked as such).
  srcExclude: ['.vitepress/**'],
  lastUpdated: false,
  markdown: {
    config(md) {
      const vitepressLinkOpen = md.renderer.rules.link_open!;
      md.renderer.rules.link_open = (tokens, index, options, env, self) => {
        const href = tokens[index]!.attrGet('href');
        const file: string | undefined = env.realPath ?? env.path;
        // A link out of docs/ stays as written (GitHub resolves it); VitePress would call it dead.
        if (href && file && checkRepositoryLink(file, href)) return self.renderToken(tokens, index, options);
        return vitepressLinkOpen(tokens, index, options, env, self);
      };
    },
  },
  themeConfig: {
    search: { provider: 'local' },
    outline: [2, 3],
    nav: [
      { text: 'Guide', link: '/getting-started' },
      { text: 'Operations', link: '/operations' },
      { text: 'Contributing', link: '/contributing' },
    ],
    sidebar: [
      {
        text: 'Introduction',
        items: [
          { text: 'Getting started', link: '/getting-started' },
          { text: 'Configuration', link: '/configuration' },
          { text: 'Clients and agents', link: '/clients' },
        ],
      },
      {
        text: 'APIs',
        items: [
          { text: 'Chat completions', link: '/chat-completions' },
          { text: 'Embeddings', link: '/embeddings' },
          { text: 'Responses API (Codex)', link: '/responses' },
          { text: 'Messages API (Claude Code)', link: '/messages' },
          { text: 'MCP gateway', link: '/mcp' },
        ],
      },
      {
        text: 'Access and spend',
        items: [
          { text: 'Keys and allow-lists', link: '/keys' },
          { text: 'Plans and rate limits', link: '/plans' },
          { text: 'Usage, pricing and budgets', link: '/budgets' },
          { text: 'Teams', link: '/teams' },
          { text: 'Roles, SSO and audit', link: '/roles' },
          { text: 'The console', link: '/console' },
        ],
      },
      {
        text: 'Models',
        items: [
          { text: 'Smart routing (auto)', link: '/routing' },
          { text: 'Providers and clouds', link: '/providers' },
          { text: 'Failures and fallbacks', link: '/failures' },
        ],
      },
      {
        text: 'Operations',
        items: [
          { text: 'Running and scaling', link: '/operations' },
          { text: 'Request log', link: '/operations#request-log' },
          { text: 'Alerts and runbooks', link: '/runbooks/README' },
          { text: 'Redis keyspace', link: '/keyspace' },
          { text: 'Performance', link: '/performance' },
        ],
      },
      {
        text: 'Internals',
        items: [
          { text: 'Architecture and layout', link: '/architecture' },
          { text: 'Contributing', link: '/contributing' },
        ],
      },
    ],
  },
});
