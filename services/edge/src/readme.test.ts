/**
 * The edge's README against the routes the edge really serves: every route (the web console's
 * own files aside, which its README lists) is in the README's endpoint table, and every row of
 * that table is a route, so the two cannot drift apart.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import { buildEdgeApp, registeredRoutes } from './app.js';
import { readEdgeConfig } from './config.js';
import type { EdgeDependencies } from './dependencies.js';

const README = fileURLToPath(new URL('../README.md', import.meta.url));

/** A route as the README writes it: `GET /admin/v1/keys/{id}` for `/admin/v1/keys/:id`, `/v1/models/{id}` for `/v1/models/*`. */
function documented(method: string, url: string): string {
  return `${method} ${url.replace(/:([a-z_]+)/g, '{$1}').replace(/\/\*$/, '/{id}')}`;
}

describe('the edge README', () => {
  it('lists every route the edge serves, and no route it does not', async () => {
    // Every route registered: the admin API and the console need the admin token.
    const app = await buildEdgeApp({
      config: readEdgeConfig({ EDGE_ADMIN_TOKEN: 'a'.repeat(40) }),
      logger: createLogger('edge', 'silent'),
      registry: new prometheus.Registry(),
      ready: async () => true,
      // With an MCP service: /mcp and /admin/v1/mcp-servers exist only then.
      mcp: {},
      // With a guard service: /admin/v1/policies exists only then.
      guard: {},
      // With a cache service: /admin/v1/cache exists only then.
      cache: {},
    } as unknown as EdgeDependencies);
    await app.ready();
    const routes = registeredRoutes(app).filter((route) => route.url !== '*' && !route.url.startsWith('/console/'));
    await app.close();
    const served = new Set(routes.map((route) => documented(route.method, route.url)));
    const readme = readFileSync(README, 'utf8');
    const table = readme.slice(readme.indexOf('## Endpoints'), readme.indexOf('\n## ', readme.indexOf('## Endpoints') + 1));
    const listed = new Set([...table.matchAll(/`((?:GET|POST|PUT|PATCH|DELETE) \/[^`\s]*)`/g)].map((match) => match[1]!));
    expect(listed.size).toBeGreaterThan(5);
    expect([...listed].filter((route) => !served.has(route))).toEqual([]);
    expect([...served].filter((route) => !listed.has(route))).toEqual([]);
  });
});
