/**
 * The configuration reload drill: the catalog and the plans are files laid out as Kubernetes mounts
 * a ConfigMap (`catalog.yaml` -> `..data/catalog.yaml`, `..data` -> a timestamped directory) and
 * are updated as the kubelet does, by swapping the `..data` symlink, while two edges carry a steady
 * load of whole and streamed completions. Without a restart and without a failed request, every
 * edge must list and serve the models the swap adds (a simulated one, and a provider's at an
 * upstream the executor has never called) within 10 s, metering must price the requests
 * after it at the new price, an invalid catalog must leave the one in use serving, and a lowered
 * plan limit must apply. Key changes made through one edge's admin API must hold on the other edge,
 * which asks another auth replica, at its next request.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient } from '@gateway/redis';
import { configMapVolume, eventually, replayJson, replaySse, startFakeUpstream, type FakeUpstream, fixture } from '@gateway/testing';
import {
  fakeModelEntry,
  meteredUsage,
  metric,
  SIM_MINI_ENTRY,
  startCluster,
  startSecondAuth,
  startSecondEdge,
  stopProcess,
  type Cluster,
  type SecondAuth,
} from './cluster.js';
import { startLoad, type LoadResult } from './soak.js';
import { createKey } from './admin-keys.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ADMIN_TOKEN = `admin-${randomBytes(24).toString('hex')}`;
/** Concurrent clients of the steady load, spread over both edges. */
const CLIENTS = 6;
/** The longest a change may take to reach every service. */
const RELOAD_WITHIN_MS = 10_000;

/** A second simulated model of the catalog. */
const SIM_STANDARD_ENTRY = SIM_MINI_ENTRY.replaceAll('sim-mini', 'sim-standard').replace('quality_tier: economy', 'quality_tier: standard');
/** The model the swap adds, at $2 / $8 per million tokens. */
const ADDED_MODEL = 'sim-added';
const ADDED_ENTRY = SIM_MINI_ENTRY.replaceAll('sim-mini', ADDED_MODEL).replace(
  'pricing: { input: "0.10", output: "0.40" }',
  'pricing: { input: "2.00", output: "8.00" }',
);
/** A provider's model the swap adds, at a fake OpenAI-compatible upstream whose key the services already have. */
const ADDED_PROVIDER_MODEL = 'fake-added';
const UPSTREAM_KEY_VARIABLE = 'RELOAD_UPSTREAM_API_KEY';
/** sim-mini's prices before and after the swap, in micro-USD per million tokens (= pico-USD per token). */
const OLD_PRICE = { input: 100_000n, output: 400_000n };
const NEW_PRICE = { input: 1_000_000n, output: 5_000_000n };
const REPRICED_MINI = SIM_MINI_ENTRY.replace('pricing: { input: "0.10", output: "0.40" }', 'pricing: { input: "1.00", output: "5.00" }');

function catalogText(entries: readonly string[]): string {
  return `models:\n${entries.join('\n')}\n`;
}

const PLANS = readFileSync(join(ROOT, 'services/auth/plans.yaml'), 'utf8');

const directory = mkdtempSync(join(tmpdir(), 'config-reload-'));
const catalogVolume = configMapVolume(join(directory, 'gateway-config'), 'catalog.yaml', catalogText([SIM_MINI_ENTRY, SIM_STANDARD_ENTRY]));
const plansVolume = configMapVolume(join(directory, 'gateway-plans'), 'plans.yaml', PLANS);

let cluster: Cluster;
let upstream: FakeUpstream;
let edgeB: Awaited<ReturnType<typeof startSecondEdge>>;
let authB: SecondAuth;
let redis: RedisClient;
let edgeAOrigin: string;

beforeAll(async () => {
  upstream = await startFakeUpstream((request, response) =>
    (request.body as { stream?: boolean }).stream === true
      ? replaySse(fixture('stream-text.sse'))(request, response)
      : replayJson(200, fixture('chat-completion.json'))(request, response),
  );
  cluster = await startCluster({
    plan: 'enterprise',
    env: {
      CATALOG_PATH: catalogVolume.path,
      AUTH_PLANS_PATH: plansVolume.path,
      EDGE_ADMIN_TOKEN: ADMIN_TOKEN,
      [UPSTREAM_KEY_VARIABLE]: 'sk-reload-test-0123456789',
    },
  });
  edgeAOrigin = cluster.baseUrl.replace(/\/v1$/, '');
  // A second auth replica, which the second edge asks: key changes must reach it through Redis alone.
  const auth = await startSecondAuth(cluster);
  authB = auth;
  edgeB = await startSecondEdge(cluster, { AUTH_SERVICE_ADDR: `127.0.0.1:${auth.port}`, EDGE_ADMIN_TOKEN: ADMIN_TOKEN });
  redis = connectRedis(cluster.redisUrl);
}, 120_000);

afterAll(async () => {
  await edgeB?.stop();
  await stopProcess(authB?.process);
  await cluster?.stop();
  await upstream?.close();
  redis?.disconnect();
  rmSync(directory, { recursive: true, force: true });
});

const EDGES = () => [cluster.baseUrl, edgeB.baseUrl];

/** One completion on an edge; resolves the status, the body and (whole) the parsed JSON. */
async function complete(
  baseUrl: string,
  apiKey: string,
  model: string,
  stream = false,
): Promise<{ status: number; text: string; json?: Record<string, unknown> }> {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'Say something short.' }], max_tokens: 16 }),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await response.text();
  return { status: response.status, text, json: !stream && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined };
}

/** A steady load on both edges, half whole and half streamed, over the models `models` names at each request. */
function startLoadOn(models: () => readonly string[]) {
  return startLoad(cluster, CLIENTS, {
    timeoutMs: 15_000,
    target: (index, sent) => {
      const choices = models();
      return { baseUrl: EDGES()[index % 2]!, model: choices[sent % choices.length]! };
    },
  });
}

async function listedModels(baseUrl: string): Promise<string[]> {
  const response = await fetch(`${baseUrl}/models`, { headers: { authorization: `Bearer ${cluster.apiKey}` } });
  const body = (await response.json()) as { data: Array<{ id: string }> };
  return body.data.map((model) => model.id);
}

/** The cost metering must record for a whole completion's usage at a price. */
function costAt(price: typeof OLD_PRICE, json: Record<string, unknown> | undefined): bigint {
  const usage = json?.usage as { prompt_tokens: number; completion_tokens: number };
  return BigInt(usage.prompt_tokens) * price.input + BigInt(usage.completion_tokens) * price.output;
}

async function reloads(metricsPort: number, file: string, outcome: string): Promise<number> {
  return metric(`http://127.0.0.1:${metricsPort}/metrics`, 'gateway_config_reload_total', { file, outcome });
}

describe('the catalog swapped under load, as a ConfigMap update', () => {
  it('is served by every edge within 10 s: the added model listed and answered, the new price metered, no request failed', async () => {
    const pricing = await createKey(edgeAOrigin, ADMIN_TOKEN, { plan: 'pro', name: 'reload-pricing' });
    const before = await complete(cluster.baseUrl, pricing.secret, 'sim-mini');
    expect(before.status).toBe(200);
    await eventually(async () => (await meteredUsage(redis, pricing.secret)).requests === 1 || undefined, 'the first request to be metered', 10_000);
    expect((await meteredUsage(redis, pricing.secret)).cost_pico_usd).toBe(costAt(OLD_PRICE, before.json));
    for (const edge of EDGES()) expect(await listedModels(edge)).toEqual(['sim-mini', 'sim-standard']);

    let served: readonly string[] = ['sim-mini', 'sim-standard'];
    const swapped = [REPRICED_MINI, SIM_STANDARD_ENTRY, ADDED_ENTRY, fakeModelEntry(upstream.baseUrl, UPSTREAM_KEY_VARIABLE, ADDED_PROVIDER_MODEL)];
    const load = startLoadOn(() => served);
    let result: LoadResult | undefined;
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const swappedAt = Date.now();
      catalogVolume.update(catalogText(swapped));
      const left = () => Math.max(1, RELOAD_WITHIN_MS - (Date.now() - swappedAt));
      for (const edge of EDGES())
        await eventually(async () => (await listedModels(edge)).includes(ADDED_MODEL) || undefined, `${edge} to list ${ADDED_MODEL}`, left(), 100);
      const listedAfterMs = Date.now() - swappedAt;
      for (const edge of EDGES())
        for (const model of [ADDED_MODEL, ADDED_PROVIDER_MODEL]) {
          expect((await complete(edge, cluster.apiKey, model)).status).toBe(200);
          const streamed = await complete(edge, cluster.apiKey, model, true);
          expect(streamed.status).toBe(200);
          expect(streamed.text).toContain('data: [DONE]');
        }
      expect(Date.now() - swappedAt).toBeLessThan(RELOAD_WITHIN_MS);
      // The executor called the new model's upstream, with the key its catalog entry names.
      expect(upstream.requests.length).toBe(4);
      expect(upstream.requests[0]!.headers.authorization).toBe('Bearer sk-reload-test-0123456789');
      // The load takes the new models too, while it runs on.
      served = ['sim-mini', 'sim-standard', ADDED_MODEL, ADDED_PROVIDER_MODEL];
      process.stdout.write(
        `config reload drill: both edges listed the added models ${listedAfterMs} ms after the swap and had served them ${Date.now() - swappedAt} ms after it\n`,
      );
      for (const port of ['routerMetrics', 'executorMetrics', 'meteringMetrics'] as const)
        await eventually(async () => (await reloads(cluster.ports[port]!, 'catalog', 'success')) === 1 || undefined, `${port} to count the reload`, left());

      // A request after the swap is priced at the new price, by the edge and by metering.
      const after = await complete(edgeB.baseUrl, pricing.secret, 'sim-mini');
      const added = await complete(cluster.baseUrl, pricing.secret, ADDED_MODEL);
      expect(after.status).toBe(200);
      expect(added.status).toBe(200);
      const expected = costAt(OLD_PRICE, before.json) + costAt(NEW_PRICE, after.json) + costAt({ input: 2_000_000n, output: 8_000_000n }, added.json);
      const metered = await eventually(
        async () => {
          const usage = await meteredUsage(redis, pricing.secret);
          return usage.requests === 3 && usage;
        },
        'the requests after the swap to be metered',
        10_000,
      );
      expect(metered.cost_pico_usd).toBe(expected);
      // And so says the usage API, to the key.
      const since = Math.floor(Date.now() / 86_400_000) * 86_400 - 86_400;
      const usage = await fetch(`${edgeB.baseUrl}/usage?start=${since}&bucket=day`, { headers: { authorization: `Bearer ${pricing.secret}` } });
      expect(usage.status).toBe(200);
      expect(((await usage.json()) as { totals: Record<string, unknown> }).totals).toMatchObject({ requests: 3, cost_pico_usd: expected.toString() });
      expect((after.json!.gateway as { cost_usd: number }).cost_usd).toBeCloseTo(Number(costAt(NEW_PRICE, after.json)) / 1e12, 12);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } finally {
      result = await load.stop();
    }
    process.stdout.write(`config reload drill: ${result.answered} answered, ${result.failures.length} failed\n`);
    expect(result.failures).toEqual([]);
    expect(result.answered).toBeGreaterThan(50);
  }, 90_000);

  it('keeps serving the catalog in use when the new file is invalid, and says so', async () => {
    const load = startLoadOn(() => ['sim-mini', ADDED_MODEL]);
    let result: LoadResult | undefined;
    try {
      catalogVolume.update(
        catalogText([
          REPRICED_MINI,
          SIM_STANDARD_ENTRY,
          ADDED_ENTRY.replace('context_window: 32768', 'context_window: many'),
          fakeModelEntry(upstream.baseUrl, UPSTREAM_KEY_VARIABLE, ADDED_PROVIDER_MODEL),
        ]),
      );
      for (const port of ['routerMetrics', 'executorMetrics', 'meteringMetrics'] as const)
        await eventually(
          async () => (await reloads(cluster.ports[port]!, 'catalog', 'invalid')) === 1 || undefined,
          `${port} to count the refusal`,
          RELOAD_WITHIN_MS,
        );
      for (const edge of EDGES()) expect(await listedModels(edge)).toEqual(['sim-mini', 'sim-standard', ADDED_MODEL, ADDED_PROVIDER_MODEL]);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } finally {
      result = await load.stop();
    }
    expect(result.failures).toEqual([]);
    expect(result.answered).toBeGreaterThan(10);
    expect(cluster.logs.router.join('')).toMatch(/catalog file is invalid; the catalog in use is kept/);
  }, 60_000);
});

describe('the plans swapped, as a ConfigMap update', () => {
  it('applies a lowered starter limit without a restart, on both auth replicas', async () => {
    const starter = await createKey(edgeAOrigin, ADMIN_TOKEN, { plan: 'starter', name: 'reload-plans' });
    plansVolume.update(PLANS.replace(/starter:\n {2}requests_per_minute: 60/, 'starter:\n  requests_per_minute: 3'));
    for (const port of [cluster.ports.authMetrics!, authB.metricsPort])
      await eventually(async () => (await reloads(port, 'plans', 'success')) === 1 || undefined, `auth on ${port} to reload its plans`, RELOAD_WITHIN_MS);
    const statuses: number[] = [];
    for (let index = 0; index < 4; index += 1) statuses.push((await complete(EDGES()[index % 2]!, starter.secret, 'sim-mini')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  }, 60_000);
});

describe('key changes through one edge', () => {
  it('hold on the other edge, through another auth replica, at its next request', async () => {
    const key = await createKey(edgeAOrigin, ADMIN_TOKEN, { plan: 'pro', name: 'reload-keys' });
    // Created on A: known on B at once.
    expect((await complete(edgeB.baseUrl, key.secret, 'sim-mini')).status).toBe(200);
    // Changed on A (one request a minute): B counts against the new limit at its next request.
    const changed = await fetch(`${edgeAOrigin}/admin/v1/keys/${key.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ limits: { requests_per_minute: 2 } }),
    });
    expect(changed.status).toBe(200);
    expect((await complete(edgeB.baseUrl, key.secret, 'sim-mini')).status).toBe(200);
    expect((await complete(edgeB.baseUrl, key.secret, 'sim-mini')).status).toBe(429);
    // Revoked on A: refused on B at its next request.
    const revoked = await fetch(`${edgeAOrigin}/admin/v1/keys/${key.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(revoked.status).toBe(200);
    const refused = await complete(edgeB.baseUrl, key.secret, 'sim-mini');
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.text)).toMatchObject({ error: { code: 'invalid_api_key', message: 'This API key has been revoked.' } });
  }, 30_000);
});
