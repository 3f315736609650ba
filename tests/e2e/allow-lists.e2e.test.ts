/**
 * Model allow-lists end to end: the five services as processes and two more edges beside the
 * cluster's, keys made and changed through the admin API. A change made through one edge refuses
 * the next request on every other edge (the lists live in the key's record, read by the one quota
 * decision: nothing to invalidate); `auto` over the routing prompts the repository ships answers
 * only with allowed models; a refused model spends nothing of the key's window; the Models API
 * lists only allowed models; and each API refuses in its own envelope.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRoutingRows } from '../../services/router/training/routing-data.js';
import { startCluster, startSecondEdge, writeCatalog, type Cluster } from './cluster.js';

const ADMIN_TOKEN = `admin-${randomBytes(16).toString('hex')}`;
/** How many routing prompts `auto` is tried with. */
const PROMPTS = 500;
/** The allow-list of the `auto` test: every capable model but the premium one. */
const NOT_PREMIUM = ['sim-mini', 'sim-standard'];

/** The default catalog's three simulated models, on their own (no real provider can join in). */
function simulatedCatalog(): string {
  const sim = (id: string, tier: string, window: number, fallbacks: string) => `  - id: ${id}
    provider: simulated
    owned_by: gateway
    created: 1735689600
    upstream: { model: ${id} }
    pricing: { input: "0.10", output: "0.40" }
    context_window: ${window}
    max_output_tokens: 4096
    capabilities: { tools: true, vision: true, streaming: true, json_mode: true }
    quality_tier: ${tier}
    fallbacks: [${fallbacks}]
    simulation: { time_to_first_token_ms: 0, tokens_per_second: 0 }`;
  return writeCatalog('allow-lists', [
    sim('sim-mini', 'economy', 200_000, ''),
    sim('sim-standard', 'standard', 200_000, 'sim-mini'),
    sim('sim-pro', 'premium', 200_000, 'sim-standard, sim-mini'),
  ]);
}

let cluster: Cluster;
let edges: Array<{ baseUrl: string; stop(): Promise<void> }> = [];

beforeAll(async () => {
  cluster = await startCluster({
    plan: 'enterprise',
    env: {
      CATALOG_PATH: simulatedCatalog(),
      EDGE_ADMIN_TOKEN: ADMIN_TOKEN,
      DEPLOYMENT_HEALTH_SUBJECT: `health.v1.deployment.test-${randomBytes(4).toString('hex')}`,
    },
  });
  edges = await Promise.all([startSecondEdge(cluster), startSecondEdge(cluster)]);
}, 120_000);

afterAll(async () => {
  await Promise.all(edges.map((edge) => edge.stop()));
  await cluster?.stop();
});

/** The admin API of the cluster's own edge. */
async function admin(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${new URL(cluster.baseUrl).origin}/admin/v1/keys${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** A new key through the admin API. */
async function newKey(body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const response = await admin('POST', '', body);
  expect(response.status).toBe(201);
  return (await response.json()) as { id: string; secret: string };
}

/** A chat completion on the edge at `baseUrl`. */
function chat(baseUrl: string, secret: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 4, ...body }),
  });
}

describe('model allow-lists', () => {
  it('a change made through one edge refuses the next request on every other edge', async () => {
    const key = await newKey({ plan: 'pro', name: 'allow-lists-change' });
    for (const edge of edges) expect((await chat(edge.baseUrl, key.secret, { model: 'sim-pro' })).status).toBe(200);

    const changed = await admin('PATCH', `/${key.id}`, { allowed_models: ['sim-mini', 'sim-standard'] });
    expect(changed.status).toBe(200);
    expect(await changed.json()).toMatchObject({ allowed_models: ['sim-mini', 'sim-standard'] });
    // The very next request on each edge, not one after a cache's expiry: how long it takes is the machine's.
    const refused = await Promise.all(edges.map((edge) => chat(edge.baseUrl, key.secret, { model: 'sim-pro' })));
    for (const response of refused) {
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ error: { type: 'permission_error', code: 'model_not_allowed', param: 'model' } });
    }
    for (const edge of edges) expect((await chat(edge.baseUrl, key.secret, { model: 'sim-standard' })).status).toBe(200);

    // Cleared: every model again, on every edge.
    expect((await admin('PATCH', `/${key.id}`, { allowed_models: null })).status).toBe(200);
    for (const edge of edges) expect((await chat(edge.baseUrl, key.secret, { model: 'sim-pro' })).status).toBe(200);
  });

  it(`auto over ${PROMPTS} routing prompts never answers with a model outside the list`, { timeout: 180_000 }, async () => {
    const key = await newKey({ plan: 'enterprise', name: 'allow-lists-auto', allowed_models: NOT_PREMIUM });
    const prompts = readRoutingRows()
      .map((row) => row.text)
      .filter((text) => text.trim() !== '')
      .slice(0, PROMPTS);
    expect(prompts).toHaveLength(PROMPTS);
    const answered = new Map<string, number>();
    let movedByTheList = 0;
    const failures: string[] = [];
    let next = 0;
    const worker = async () => {
      for (let index = next++; index < prompts.length; index = next++) {
        const response = await chat(cluster.baseUrl, key.secret, { model: 'auto', messages: [{ role: 'user', content: prompts[index]!.slice(0, 20_000) }] });
        if (response.status !== 200) {
          failures.push(`${response.status} ${(await response.text()).slice(0, 200)}`);
          continue;
        }
        const body = (await response.json()) as { gateway: { routed_to: string; auto?: { reason: string | null } } };
        answered.set(body.gateway.routed_to, (answered.get(body.gateway.routed_to) ?? 0) + 1);
        if (body.gateway.auto?.reason?.includes('sim-pro is not allowed for this key')) movedByTheList += 1;
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(failures).toEqual([]);
    expect(
      [...answered.keys()].every((model) => NOT_PREMIUM.includes(model)),
      JSON.stringify([...answered]),
    ).toBe(true);
    // The router asked for the premium model for some of them: the list had something to refuse.
    expect(movedByTheList).toBeGreaterThan(0);
  });

  it('a refused model is refused before anything is spent: the key’s window is untouched', async () => {
    const key = await newKey({ plan: 'pro', name: 'allow-lists-spend', allowed_models: ['sim-mini'], limits: { requests_per_minute: 5 } });
    for (let index = 0; index < 8; index += 1) expect((await chat(cluster.baseUrl, key.secret, { model: 'sim-pro' })).status).toBe(403);
    // Eight refusals over a limit of five counted nothing: the first allowed request is the window's first.
    const allowed = await chat(cluster.baseUrl, key.secret, { model: 'sim-mini' });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('x-ratelimit-limit-requests')).toBe('5');
    expect(allowed.headers.get('x-ratelimit-remaining-requests')).toBe('4');
  });

  it('/v1/models lists only the allowed models, in both formats, and a disallowed one is a 404', async () => {
    const key = await newKey({ plan: 'pro', name: 'allow-lists-models', allowed_models: ['sim-m*', 'sim-standard'] });
    const openai = await fetch(`${cluster.baseUrl}/models`, { headers: { authorization: `Bearer ${key.secret}` } });
    expect(((await openai.json()) as { data: { id: string }[] }).data.map((model) => model.id)).toEqual(['sim-mini', 'sim-standard']);
    const anthropic = await fetch(`${cluster.baseUrl}/models`, { headers: { 'x-api-key': key.secret, 'anthropic-version': '2023-06-01' } });
    expect(((await anthropic.json()) as { data: { id: string }[] }).data.map((model) => model.id)).toEqual(['sim-mini', 'sim-standard']);
    expect((await fetch(`${cluster.baseUrl}/models/sim-mini`, { headers: { authorization: `Bearer ${key.secret}` } })).status).toBe(200);
    const hidden = await fetch(`${cluster.baseUrl}/models/sim-pro`, { headers: { authorization: `Bearer ${key.secret}` } });
    expect(hidden.status).toBe(404);
    expect(await hidden.json()).toMatchObject({ error: { code: 'model_not_found' } });
  });

  it('each API refuses a disallowed model in its own envelope', async () => {
    const key = await newKey({ plan: 'pro', name: 'allow-lists-envelopes', allowed_models: ['sim-mini'] });
    const chatRefusal = await chat(cluster.baseUrl, key.secret, { model: 'sim-pro' });
    expect(chatRefusal.status).toBe(403);
    expect(await chatRefusal.json()).toEqual({
      error: { message: 'This API key is not allowed to use the model `sim-pro`.', type: 'permission_error', param: 'model', code: 'model_not_allowed' },
    });
    const responses = await fetch(`${cluster.baseUrl}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-pro', input: 'Hello there' }),
    });
    expect(responses.status).toBe(403);
    expect(await responses.json()).toMatchObject({ error: { type: 'permission_error', code: 'model_not_allowed' } });
    const messages = await fetch(`${cluster.baseUrl}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key.secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-pro', max_tokens: 4, messages: [{ role: 'user', content: 'Hello there' }] }),
    });
    expect(messages.status).toBe(403);
    expect(await messages.json()).toEqual({
      type: 'error',
      error: { type: 'permission_error', message: 'This API key is not allowed to use the model `sim-pro`.' },
    });
    const allowed = await chat(cluster.baseUrl, key.secret, { model: 'sim-mini' });
    expect(allowed.status).toBe(200);
  });
});
