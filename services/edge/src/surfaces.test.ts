/**
 * The edge's surfaces (EDGE_ADMIN_PORT): the public app answers the admin API and the console with
 * the plain 404, the admin app serves them and nothing of the public API, both have /healthz, and
 * the two count into one registry; without a surface, one app serves everything as before.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import type { AuthServiceClient, ListKeysResponseOutput } from '@gateway/proto';
import { buildEdgeApp, type EdgeSurface, registeredRoutes } from './app.js';
import { readEdgeConfig } from './config.js';
import type { EdgeDependencies } from './dependencies.js';

const ADMIN_TOKEN = 'admin-token-for-tests-0123456789abcdef';
const registry = new prometheus.Registry();

/** auth answering ListKeys with no key; nothing else of it is called here. */
const auth = {
  ListKeys: (_request: unknown, _metadata: unknown, _options: unknown, callback: (error: Error | null, response?: ListKeysResponseOutput) => void) => {
    setImmediate(() => callback(null, { keys: [] }));
    return { cancel() {} };
  },
} as unknown as AuthServiceClient;

const deps = {
  config: readEdgeConfig({ EDGE_ADMIN_TOKEN: ADMIN_TOKEN, EDGE_ADMIN_PORT: '8081' }),
  logger: createLogger('edge', 'silent'),
  registry,
  auth,
  ready: async () => true,
} as unknown as EdgeDependencies;

const apps = {} as Record<EdgeSurface, FastifyInstance>;

beforeAll(async () => {
  // The public and the admin app share a registry, as the two listeners of one edge do.
  apps.public = await buildEdgeApp(deps, { surface: 'public' });
  apps.admin = await buildEdgeApp(deps, { surface: 'admin' });
  apps.both = await buildEdgeApp({ ...deps, registry: new prometheus.Registry() });
  await Promise.all(Object.values(apps).map((app) => app.ready()));
});

afterAll(async () => {
  await Promise.all(Object.values(apps).map((app) => app.close()));
});

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const urls = (surface: EdgeSurface) => registeredRoutes(apps[surface]).map((route) => route.url);

describe('the public surface', () => {
  it.each(['/admin/v1/keys', '/admin/v1/usage', '/console', '/console/', '/console/app.js'])('answers GET %s with the 404 of an unknown URL', async (url) => {
    const response = await apps.public.inject({ method: 'GET', url, headers: admin });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({
      error: { message: `Unknown request URL: GET ${url}.`, type: 'invalid_request_error', param: null, code: 'unknown_url' },
    });
  });

  it('serves the public API and the probes', async () => {
    expect(urls('public')).toEqual(
      expect.arrayContaining(['/v1/chat/completions', '/v1/responses', '/v1/messages', '/v1/models', '/v1/usage', '/healthz', '/readyz']),
    );
    expect(urls('public').filter((url) => url.startsWith('/admin') || url.startsWith('/console'))).toEqual([]);
    expect((await apps.public.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
  });
});

describe('the admin surface', () => {
  it('serves the admin API with the admin token, and refuses it without', async () => {
    const listed = await apps.admin.inject({ method: 'GET', url: '/admin/v1/keys', headers: admin });
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toMatchObject({ object: 'list', data: [] });
    expect((await apps.admin.inject({ method: 'GET', url: '/admin/v1/keys' })).statusCode).toBe(401);
  });

  it('serves the console (here, not built: its own 503) and the probes, and nothing of the public API', async () => {
    const console = await apps.admin.inject({ method: 'GET', url: '/console' });
    expect(console.statusCode).toBe(503);
    expect(console.json().error.code).toBe('console_not_built');
    expect((await apps.admin.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await apps.admin.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ready' });
    const completion = await apps.admin.inject({ method: 'POST', url: '/v1/chat/completions', payload: {} });
    expect(completion.statusCode).toBe(404);
    expect(completion.json().error.code).toBe('unknown_url');
    expect(urls('admin').filter((url) => url.startsWith('/v1/'))).toEqual([]);
  });
});

describe('both surfaces on one port (EDGE_ADMIN_PORT unset)', () => {
  it('serves every route of the public and the admin surface', () => {
    expect(new Set(urls('both'))).toEqual(new Set([...urls('public'), ...urls('admin')]));
  });
});

it('counts the requests of both listeners in one registry', async () => {
  await apps.admin.inject({ method: 'GET', url: '/healthz' });
  await apps.public.inject({ method: 'GET', url: '/healthz' });
  const metrics = await registry.getSingleMetricAsString('gateway_http_requests_total');
  expect(metrics).toMatch(/gateway_http_requests_total\{route="\/admin\/v1\/keys",status="200"\} 1/);
  expect(metrics).toMatch(/gateway_http_requests_total\{route="\/healthz",status="200"\} [3-9]/);
});
