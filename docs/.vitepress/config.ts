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

/**
 * The sidebar: each group's pages by their links. A page is shown by its own heading (a section,
 * `/page#anchor`, by its `##` heading), so the sidebar cannot drift from the pages; a title is given
 * only where the heading is too long for a sidebar.
 */
const SIDEBAR: Record<string, Array<string | [link: string, title: string]>> = {
  Introduction: ['/getting-started', '/configuration', '/clients'],
  APIs: ['/chat-completions', '/embeddings', '/responses', '/messages', '/batches', '/mcp'],
  'Access and spend': ['/keys', '/plans', '/budgets', '/teams', '/roles', '/guardrails', '/cache', '/console'],
  Models: [['/routing', 'Smart routing (auto)'], '/providers', '/failures'],
  Operations: [
    '/operations',
    ['/deployment', 'Kubernetes'],
    ['/deployment-state', 'NATS and Redis'],
    '/deployment-monitoring',
    '/operations#request-log',
    '/request-log',
    '/deploy-postgres',
    '/deploy-entry',
    ['/runbooks/README', 'Alerts and runbooks'],
    ['/keyspace', 'Redis keyspace'],
    '/performance',
  ],
  Internals: ['/architecture', '/contributing'],
};

/** A sidebar entry: its link, shown by the given title or the heading it links to. */
function sidebarItem(page: string | [link: string, title: string]): { text: string; link: string } {
  if (typeof page !== 'string') return { text: page[1], link: page[0] };
  const [path, anchor] = page.slice(1).split('#');
  const headings = [...readFileSync(join(DOCS, `${path}.md`), 'utf8').matchAll(/^(#{1,2}) (.+)$/gm)];
  const heading = anchor
    ? headings.find(([, level, text]) => level === '##' && text!.toLowerCase().replaceAll(' ', '-') === anchor)
    : headings.find(([, level]) => level === '#');
  if (!heading) throw new Error(`The sidebar links to ${page}, which has no such heading.`);
  return { text: heading[2]!, link: page };
}

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
    sidebar: Object.entries(SIDEBAR).map(([text, pages]) => ({ text, items: pages.map(sidebarItem) })),
  },
});
