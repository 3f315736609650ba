/**
 * A plan or key that turns catalog fallback chains on by default: a request that says nothing
 * about fallbacks is answered by the catalog's next model when its primary fails (an
 * openai-compatible model served by a failing fake upstream, falling back to `sim-mini`); an
 * explicit `"fallbacks": false` turns that off for the one request.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayJson, startFakeUpstream, type FakeUpstream, fixture } from '@gateway/testing';
import { SIM_MINI_ENTRY, fakeModelEntry, startCluster, writeCatalog, type Cluster } from './cluster.js';

const KEY_VARIABLE = 'FAKE_UPSTREAM_API_KEY';
const ADMIN_TOKEN = `admin-${randomBytes(16).toString('hex')}`;
let upstream: FakeUpstream;
let cluster: Cluster;

function catalogFile(baseUrl: string): string {
  return writeCatalog('key-fallbacks', [SIM_MINI_ENTRY, fakeModelEntry(baseUrl, KEY_VARIABLE)]);
}

function post(secret: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${cluster.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'Hello there' }], ...body }),
  });
}

function admin(method: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${new URL(cluster.baseUrl).origin}/admin/v1/keys${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** Expects the catalog's fallback to have answered after the failed primary. */
async function expectFallbackAnswer(response: Response): Promise<void> {
  expect(response.status).toBe(200);
  const body = (await response.json()) as { gateway: { routed_to: string; tried: Array<{ model: string }> } };
  expect(body.gateway.routed_to).toBe('sim-mini');
  expect(body.gateway.tried.map((attempt) => attempt.model)).toEqual(['fake-model']);
}

/**
 * Expects the primary's failure itself: 502 while the upstream's error is passed on, 503
 * model_unavailable once the breakers opened; either way no fallback answered.
 */
async function expectRefused(response: Response): Promise<void> {
  expect([502, 503]).toContain(response.status);
  expect(await response.json()).toHaveProperty('error');
}

beforeAll(async () => {
  // Every call to the primary fails with a retryable 503.
  upstream = await startFakeUpstream(replayJson(503, fixture('error-500.json')));
  cluster = await startCluster({
    plan: 'enterprise',
    env: {
      LOG_LEVEL: 'warn',
      CATALOG_PATH: catalogFile(upstream.baseUrl),
      [KEY_VARIABLE]: 'sk-test-key-fallbacks',
      EDGE_ADMIN_TOKEN: ADMIN_TOKEN,
      DEPLOYMENT_HEALTH_SUBJECT: `health.v1.deployment.test-${randomBytes(4).toString('hex')}`,
      EXECUTOR_RETRY_BASE_DELAY_MS: '10',
    },
  });
});

afterAll(async () => {
  await cluster?.stop();
  await upstream?.close();
});

describe('catalog fallbacks on by default', () => {
  it('a plan that turns chains on answers from the fallback; "fallbacks": false gives 503', async () => {
    await expectFallbackAnswer(await post(cluster.apiKey, {}));
    await expectRefused(await post(cluster.apiKey, { fallbacks: false }));
  });

  it('a key override turns chains on over a plan that has them off, and back', async () => {
    const created = await admin('POST', '', { plan: 'pro' });
    expect(created.status).toBe(201);
    const key = (await created.json()) as { id: string; secret: string; catalog_fallbacks: boolean };
    expect(key.catalog_fallbacks).toBe(false);
    await expectRefused(await post(key.secret, {}));

    expect((await admin('PATCH', `/${key.id}`, { catalog_fallbacks: true })).status).toBe(200);
    await expectFallbackAnswer(await post(key.secret, {}));
    await expectRefused(await post(key.secret, { fallbacks: false }));

    expect((await admin('PATCH', `/${key.id}`, { catalog_fallbacks: null })).status).toBe(200);
    await expectRefused(await post(key.secret, {}));
  });
});
