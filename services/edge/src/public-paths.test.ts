/**
 * The public paths table against the routes the edge registers: every route of the public surface
 * (with every optional part on: the MCP gateway, the batch service) lies under a line of
 * PUBLIC_PATHS or is one of the UNROUTED_PATHS, and every line serves at least one route; so a
 * route added without a line here fails, and check-manifests then fails the manifests that do not
 * route it.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import { buildEdgeApp, type EdgeSurface, registeredRoutes } from './app.js';
import { readEdgeConfig } from './config.js';
import type { EdgeDependencies } from './dependencies.js';
import { coveredBy, PUBLIC_PATHS, UNROUTED_PATHS } from './public-paths.js';

/** Every optional part on: the MCP gateway (its routes exist only with a client) and the batch service; none is called here. */
const deps = (registry: prometheus.Registry) =>
  ({
    config: readEdgeConfig({
      EDGE_ADMIN_TOKEN: 'admin-token-for-tests-0123456789abcdef',
      EDGE_ADMIN_PORT: '8081',
      MCP_SERVICE_ADDR: 'mcp:50057',
      BATCH_SERVICE_ADDR: 'batch:50059',
    }),
    logger: createLogger('edge', 'silent'),
    registry,
    mcp: {},
    batch: {},
    ready: async () => true,
  }) as unknown as EdgeDependencies;

const apps = {} as Record<EdgeSurface, FastifyInstance>;

beforeAll(async () => {
  for (const surface of ['public', 'admin', 'both'] as const) apps[surface] = await buildEdgeApp(deps(new prometheus.Registry()), { surface });
  await Promise.all(Object.values(apps).map((app) => app.ready()));
});

afterAll(async () => {
  await Promise.all(Object.values(apps).map((app) => app.close()));
});

const urls = (surface: EdgeSurface) => [...new Set(registeredRoutes(apps[surface]).map((route) => route.url))];
const routed = (url: string) => PUBLIC_PATHS.some((entry) => coveredBy(entry, url));

describe('the public paths table', () => {
  it('covers every route of the public port, the MCP gateway and its OAuth metadata included', () => {
    expect(urls('public').filter((url) => !routed(url) && !UNROUTED_PATHS.includes(url))).toEqual([]);
    for (const url of ['/mcp', '/mcp/oauth/callback', '/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp'])
      expect(urls('public')).toContain(url);
  });

  it("covers OpenAI's Files and Batch APIs under /v1, batch service or not (without one they answer a 404 that says so)", () => {
    const batchUrls = ['/v1/files', '/v1/files/:id', '/v1/files/:id/content', '/v1/batches', '/v1/batches/:id', '/v1/batches/:id/cancel'];
    expect(urls('public')).toEqual(expect.arrayContaining(batchUrls));
    const v1 = PUBLIC_PATHS.find((entry) => entry.path === '/v1')!;
    for (const url of batchUrls) expect(coveredBy(v1, url), url).toBe(true);
  });

  it("covers Anthropic's Message Batches API under /v1, batch service or not", () => {
    const batchUrls = ['/v1/messages/batches', '/v1/messages/batches/:id', '/v1/messages/batches/:id/cancel', '/v1/messages/batches/:id/results'];
    expect(urls('public')).toEqual(expect.arrayContaining(batchUrls));
    const v1 = PUBLIC_PATHS.find((entry) => entry.path === '/v1')!;
    for (const url of batchUrls) expect(coveredBy(v1, url), url).toBe(true);
  });

  it('names only paths the public port serves', () => {
    for (const entry of PUBLIC_PATHS)
      expect(
        urls('public').filter((url) => coveredBy(entry, url)),
        entry.path,
      ).not.toEqual([]);
    for (const path of UNROUTED_PATHS) expect(urls('public')).toContain(path);
  });

  it('covers nothing of the admin port: the admin API and the console stay private', () => {
    const adminOnly = urls('admin').filter((url) => !urls('public').includes(url));
    expect(adminOnly.length).toBeGreaterThan(0);
    expect(adminOnly.filter(routed)).toEqual([]);
    // On one port (EDGE_ADMIN_PORT unset) the admin routes are there too, and still not in the table.
    expect(urls('both').filter((url) => !routed(url) && !UNROUTED_PATHS.includes(url))).toEqual(expect.arrayContaining(adminOnly));
  });
});
