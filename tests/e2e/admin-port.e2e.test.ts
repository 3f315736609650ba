/**
 * The admin API and the web console on a listener of their own (EDGE_ADMIN_PORT): the public port
 * answers them with the plain 404, the admin port serves them with the admin token (a key created
 * there works on the public port), and SIGTERM closes both listeners.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startCluster, stopProcess, type Cluster } from './cluster.js';

const ADMIN_TOKEN = `admin-${randomBytes(24).toString('hex')}`;
let cluster: Cluster;
let publicOrigin: string;
let adminOrigin: string;

beforeAll(async () => {
  const adminPort = await freePort();
  cluster = await startCluster({ env: { EDGE_ADMIN_TOKEN: ADMIN_TOKEN, EDGE_ADMIN_PORT: String(adminPort) } });
  publicOrigin = new URL(cluster.baseUrl).origin;
  adminOrigin = `http://127.0.0.1:${adminPort}`;
});

afterAll(async () => {
  await cluster?.stop();
});

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

describe('with EDGE_ADMIN_PORT set', () => {
  it.each(['/admin/v1/keys', '/admin/v1/usage', '/console', '/console/app.js'])(
    'the public port answers GET %s with the 404 of an unknown URL',
    async (path) => {
      const response = await fetch(`${publicOrigin}${path}`, { headers: admin });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({
        error: { message: `Unknown request URL: GET ${path}.`, type: 'invalid_request_error', param: null, code: 'unknown_url' },
      });
    },
  );

  it('the admin port serves the admin API with the admin token; a key it creates works on the public port', async () => {
    expect((await fetch(`${adminOrigin}/admin/v1/keys`)).status).toBe(401);
    const created = await fetch(`${adminOrigin}/admin/v1/keys`, {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'pro', name: 'admin-port' }),
    });
    expect(created.status).toBe(201);
    const key = (await created.json()) as { id: string; secret: string };
    const listed = await fetch(`${adminOrigin}/admin/v1/keys/${key.id}`, { headers: admin });
    expect(listed.status).toBe(200);
    expect(await listed.json()).toMatchObject({ id: key.id, name: 'admin-port', revoked: false });
    const models = await fetch(`${cluster.baseUrl}/models`, { headers: { authorization: `Bearer ${key.secret}` } });
    expect(models.status).toBe(200);
  });

  it('the admin port serves the console and the probes, and none of the public API', async () => {
    const page = await fetch(`${adminOrigin}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect((await fetch(`${adminOrigin}/healthz`)).status).toBe(200);
    expect((await fetch(`${adminOrigin}/readyz`)).status).toBe(200);
    const models = await fetch(`${adminOrigin}/v1/models`, { headers: { authorization: `Bearer ${cluster.apiKey}` } });
    expect(models.status).toBe(404);
    expect(((await models.json()) as { error: { code: string } }).error.code).toBe('unknown_url');
  });

  it('SIGTERM closes both listeners and the edge exits cleanly', async () => {
    const edge = cluster.processes.edge;
    await stopProcess(edge);
    expect(edge.exitCode).toBe(0);
    await expect(fetch(`${adminOrigin}/healthz`)).rejects.toThrow();
    await expect(fetch(`${publicOrigin}/healthz`)).rejects.toThrow();
  });
});
