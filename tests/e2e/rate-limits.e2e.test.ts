/**
 * Keys, plans and rate limits across replicas: two edges, each with its own auth process, sharing
 * one Redis, driven over raw HTTP (the headers are the point). Keys are made with the admin API.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@gateway/testing';
import { freePort, startCluster, stopProcess, writeCatalog, type Cluster } from './cluster.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ADMIN_TOKEN = 'admin-token-for-the-rate-limit-tests-0123456789';

/** A simulated economy model whose first token comes after `timeToFirstTokenMs`, as a catalog YAML entry. */
const simulatedEntry = (id: string, timeToFirstTokenMs: number) => `  - id: ${id}
    provider: simulated
    owned_by: gateway
    created: 1735689600
    upstream: { model: ${id} }
    pricing: { input: "0.10", cached_input: "0.05", output: "0.40" }
    context_window: 200000
    max_output_tokens: 120000
    capabilities: { tools: true, vision: false, streaming: true, json_mode: true }
    quality_tier: economy
    simulation: { time_to_first_token_ms: ${timeToFirstTokenMs}, tokens_per_second: 0 }`;

// A fast model, and a slow one whose answer takes 1.5 s, so a reservation stays open long enough
// to observe it before settlement.
const catalog = () => writeCatalog('rate-limits', [simulatedEntry('sim-fast', 0), simulatedEntry('sim-slow', 1_500)]);

/**
 * The quota window of the auth processes that a test waits out (AUTH_QUOTA_WINDOW_SECONDS; 60
 * elsewhere): long enough for a burst of 60 requests to land in one window on a busy machine, short
 * enough to wait through.
 */
const SHORT_WINDOW_SECONDS = 5;

/** A second auth and a second edge (the edge talking to that auth), beside a running cluster. */
async function startReplicas(cluster: Cluster, env: Record<string, string>): Promise<{ origin: string; stop(): Promise<void> }> {
  const [auth, authMetrics, edge] = await Promise.all([freePort(), freePort(), freePort()]);
  const common = { ...(process.env as Record<string, string>), LOG_LEVEL: 'warn', REDIS_URL: cluster.redisUrl, NATS_URL: cluster.natsUrl, ...env };
  const children: ChildProcess[] = [
    spawn(process.execPath, ['services/auth/dist/main.js'], {
      cwd: ROOT,
      stdio: 'ignore',
      env: { ...common, AUTH_LISTEN_ADDR: `127.0.0.1:${auth}`, AUTH_METRICS_PORT: String(authMetrics), GATEWAY_BOOTSTRAP_KEY: '' },
    }),
    spawn(process.execPath, ['services/edge/dist/main.js'], {
      cwd: ROOT,
      stdio: 'ignore',
      env: {
        ...common,
        EDGE_HOST: '127.0.0.1',
        EDGE_PORT: String(edge),
        EDGE_METRICS_PORT: '0',
        AUTH_SERVICE_ADDR: `127.0.0.1:${auth}`,
        ROUTER_SERVICE_ADDR: `127.0.0.1:${cluster.ports.router}`,
        EXECUTOR_SERVICE_ADDR: `127.0.0.1:${cluster.ports.executor}`,
      },
    }),
  ];
  const origin = `http://127.0.0.1:${edge}`;
  await eventually(async () => (await fetch(`${origin}/readyz`).catch(() => undefined))?.status === 200, 'the second edge to be ready', 60_000, 100);
  return {
    origin,
    stop: async () => {
      await Promise.all(children.map((child) => stopProcess(child)));
    },
  };
}

interface KeyJson {
  id: string;
  secret: string;
  plan: string;
  revoked: boolean;
  limits: Record<string, unknown>;
}

function admin(origin: string, method: string, path: string, body?: unknown, token = ADMIN_TOKEN): Promise<Response> {
  return fetch(`${origin}/admin/v1/keys${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function createKey(origin: string, body: Record<string, unknown>): Promise<KeyJson> {
  const response = await admin(origin, 'POST', '', body);
  expect(response.status).toBe(201);
  return (await response.json()) as KeyJson;
}

function complete(origin: string, secret: string, body: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim-fast', messages: [{ role: 'user', content: 'Say hi.' }], max_tokens: 100, ...body }),
  });
}

/** The first answer of `send`, sent again and again, that is a 200; rejects after `timeoutMs`. */
function allowedWithin(timeoutMs: number, description: string, send: () => Promise<Response>): Promise<Response> {
  return eventually(
    async () => {
      const response = await send();
      if (response.status === 200) return response;
      await response.arrayBuffer();
      return undefined;
    },
    description,
    timeoutMs,
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

describe('two edges and two auth processes on one Redis', () => {
  let cluster: Cluster;
  let replicas: Awaited<ReturnType<typeof startReplicas>>;
  let edges: string[];

  beforeAll(async () => {
    // A deadline of 30 s, not the production 2 s, for the auth and router calls: on a machine loaded
    // by a test run beside this one, a burst of 200 must meet the limits, not the deadline (whose
    // 503s are faults.e2e.test.ts's).
    // Keys under a prefix of their own (AUTH_REDIS_PREFIX, on both auths and metering): the
    // settlement below holds only when metering settles under the prefix auth reserves under.
    const env = {
      CATALOG_PATH: catalog(),
      EDGE_ADMIN_TOKEN: ADMIN_TOKEN,
      EDGE_CONTROL_DEADLINE_MS: '30000',
      AUTH_REDIS_PREFIX: `auth:e2e-${randomBytes(4).toString('hex')}:`,
    };
    cluster = await startCluster({ env });
    replicas = await startReplicas(cluster, env);
    edges = [cluster.baseUrl.replace(/\/v1$/, ''), replicas.origin];
  });

  afterAll(async () => {
    await replicas?.stop();
    await cluster?.stop();
  });

  it('gives exactly 60 of 200 concurrent Starter requests, and a Retry-After within the minute', async () => {
    const key = await createKey(edges[0]!, { plan: 'starter', name: 'burst' });
    const responses = await Promise.all(Array.from({ length: 200 }, (_, index) => complete(edges[index % 2]!, key.secret)));
    const ok = responses.filter((response) => response.status === 200);
    const limited = responses.filter((response) => response.status === 429);
    const counts: Record<number, number> = {};
    for (const response of responses) counts[response.status] = (counts[response.status] ?? 0) + 1;
    const statuses = `statuses ${JSON.stringify(counts)}`;
    expect(ok, statuses).toHaveLength(60);
    expect(limited).toHaveLength(140);

    // Every success says how many requests remain after it: each of 59..0 exactly once.
    const remaining = ok.map((response) => Number(response.headers.get('x-ratelimit-remaining-requests'))).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 60 }, (_, index) => index));
    for (const response of ok) {
      expect(response.headers.get('x-ratelimit-limit-requests')).toBe('60');
      expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('100000');
      expect(response.headers.get('x-ratelimit-reset-requests')).toMatch(/^(\d+(\.\d+)?s|\d+ms|\dm\d+(\.\d+)?s)$/);
      await response.arrayBuffer();
    }
    for (const response of limited) {
      const body = (await response.json()) as { error: Record<string, unknown> };
      expect(body.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded', param: null });
      expect(body.error.message).toMatch(/requests per minute: limit 60/);
      const retryAfter = Number(response.headers.get('retry-after'));
      const retryAfterMs = Number(response.headers.get('retry-after-ms'));
      expect(retryAfter).toBe(Math.ceil(retryAfterMs / 1000));
      expect(retryAfter).toBeGreaterThanOrEqual(50);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
      expect(response.headers.get('x-ratelimit-limit-requests')).toBe('60');
    }

    // Still refused after the burst, on the other edge; the wait is waited out below, on a short window.
    const probe = await complete(edges[1]!, key.secret);
    expect(probe.status).toBe(429);
    expect(Number(probe.headers.get('retry-after'))).toBe(Math.ceil(Number(probe.headers.get('retry-after-ms')) / 1000));
    await probe.arrayBuffer();
  }, 120_000);

  it(
    `gives a Retry-After correct to the second, on auth processes with a ${SHORT_WINDOW_SECONDS} s window`,
    async () => {
      const short = { CATALOG_PATH: catalog(), EDGE_ADMIN_TOKEN: ADMIN_TOKEN, AUTH_QUOTA_WINDOW_SECONDS: String(SHORT_WINDOW_SECONDS) };
      const pair = await Promise.all([startReplicas(cluster, short), startReplicas(cluster, short)]);
      try {
        const [first, second] = pair.map((replica) => replica.origin) as [string, string];
        const key = await createKey(first, { plan: 'starter', name: 'short window' });
        const responses = await Promise.all(Array.from({ length: 60 }, (_, index) => complete(index % 2 ? second : first, key.secret)));
        expect(responses.map((response) => response.status)).toEqual(responses.map(() => 200));
        await Promise.all(responses.map((response) => response.arrayBuffer()));

        // Correct to the second: one second early it is still refused, just after it is allowed.
        const probe = await complete(second, key.secret);
        const receivedAt = Date.now();
        expect(probe.status).toBe(429);
        const wait = Number(probe.headers.get('retry-after-ms'));
        expect(Number(probe.headers.get('retry-after'))).toBe(Math.ceil(wait / 1000));
        expect(wait).toBeLessThanOrEqual(SHORT_WINDOW_SECONDS * 1_000);
        await probe.arrayBuffer();
        await sleep(receivedAt + wait - 1_000 - Date.now());
        const early = await complete(first, key.secret);
        expect(early.status).toBe(429);
        await early.arrayBuffer();
        await sleep(receivedAt + wait + 150 - Date.now());
        const onTime = await complete(second, key.secret);
        expect(onTime.status).toBe(200);
        // The whole burst leaves the window within the burst's own duration, so most slots are free again.
        expect(Number(onTime.headers.get('x-ratelimit-remaining-requests'))).toBeLessThan(60);
      } finally {
        await Promise.all(pair.map((replica) => replica.stop()));
      }
    },
    120_000 + SHORT_WINDOW_SECONDS * 1_000,
  );

  it("puts the rate-limit headers on a stream's response head", async () => {
    const key = await createKey(edges[1]!, { plan: 'pro' });
    const response = await complete(edges[0]!, key.secret, { stream: true });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('1000');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('999');
    expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('2000000');
    expect(await response.text()).toContain('data: [DONE]');
  });

  it('refuses over the tokens per minute while a large reservation is open, and settles it after the call', async () => {
    const key = await createKey(edges[0]!, { plan: 'starter' });
    const started = Date.now();
    const big = complete(edges[0]!, key.secret, { model: 'sim-slow', max_tokens: 90_000 });
    await sleep(500);
    const refused = await complete(edges[1]!, key.secret, { max_tokens: 20_000 });
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: 'tokens', code: 'rate_limit_exceeded' });
    expect(body.error.message).toMatch(/tokens per minute: limit 100000/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(55);
    expect(Number(refused.headers.get('x-ratelimit-remaining-tokens'))).toBeLessThan(10_000);

    const first = await big;
    expect(first.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    const reservedRemaining = Number(first.headers.get('x-ratelimit-remaining-tokens'));
    expect(reservedRemaining).toBeLessThan(10_000);
    const { usage } = (await first.json()) as { usage: { total_tokens: number } };

    // Settled to the real usage: the same 20k request now fits, and the headers show the refund.
    const after = await allowedWithin(3_000, 'the settlement to refund the reservation', () => complete(edges[1]!, key.secret, { max_tokens: 20_000 }));
    const remainingAfter = Number(after.headers.get('x-ratelimit-remaining-tokens'));
    expect(remainingAfter).toBeLessThanOrEqual(100_000 - usage.total_tokens - 20_000);
    expect(remainingAfter).toBeGreaterThan(100_000 - usage.total_tokens - 20_000 - 100);
  });

  it("refuses a request that alone needs more than the minute's tokens, saying so, without retry", async () => {
    const key = await createKey(edges[0]!, { plan: 'starter' });
    const response = await complete(edges[1]!, key.secret, { max_tokens: 110_000 });
    expect(response.status).toBe(429);
    expect(response.headers.get('x-should-retry')).toBe('false');
    expect(response.headers.get('retry-after')).toBeNull();
    const body = (await response.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ code: 'request_too_large', type: 'tokens' });
    expect(body.error.message).toMatch(/Request too large.*allows 100000 tokens per minute/);
    // Nothing was counted.
    const next = await complete(edges[0]!, key.secret);
    expect(next.headers.get('x-ratelimit-remaining-requests')).toBe('59');
  });

  it('gives back the tokens of a request that failed after its reservation', async () => {
    const key = await createKey(edges[0]!, { plan: 'starter' });
    const failed = await complete(edges[0]!, key.secret, { model: 'sim-missing', max_tokens: 90_000 });
    expect(failed.status).toBe(404);
    await failed.arrayBuffer();
    // Settled with 0: a 20k request fits again, and only the failed request's slot stays counted.
    const next = await allowedWithin(3_000, "the failed request's reservation to be released", () => complete(edges[1]!, key.secret, { max_tokens: 20_000 }));
    expect(Number(next.headers.get('x-ratelimit-remaining-tokens'))).toBeGreaterThan(79_000);
    expect(next.headers.get('x-ratelimit-remaining-requests')).toBe('58');
  });

  it('applies a revocation and a plan change on every replica from the next request on', async () => {
    const key = await createKey(edges[0]!, { plan: 'starter' });
    for (const edge of edges) expect((await complete(edge, key.secret)).status).toBe(200);

    const patched = await admin(edges[1]!, 'PATCH', `/${key.id}`, { plan: 'enterprise' });
    expect(patched.status).toBe(200);
    // The very next request on each replica, not one after a cache's expiry.
    for (const edge of edges) {
      const response = await complete(edge, key.secret);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-limit-requests')).toBeNull();
    }

    const revoked = await admin(edges[1]!, 'DELETE', `/${key.id}`);
    expect(revoked.status).toBe(200);
    expect(await revoked.json()).toMatchObject({ id: key.id, revoked: true });
    const statuses = await Promise.all(edges.map(async (edge) => (await complete(edge, key.secret)).status));
    expect(statuses).toEqual([401, 401]);
  });

  it('never limits an Enterprise key', async () => {
    const key = await createKey(edges[0]!, { plan: 'enterprise' });
    const responses = await Promise.all(Array.from({ length: 150 }, (_, index) => complete(edges[index % 2]!, key.secret, { max_tokens: 100_000 })));
    expect(responses.map((response) => response.status)).toEqual(responses.map(() => 200));
    for (const response of responses) {
      expect(response.headers.get('x-ratelimit-limit-requests')).toBeNull();
      await response.arrayBuffer();
    }
  });

  it('manages keys only with the admin token', async () => {
    const key = await createKey(edges[0]!, { plan: 'pro', name: 'managed', limits: { requests_per_minute: 5 }, routing_policy: 'cheapest' });
    expect(key.secret).toMatch(/^br-[A-Za-z0-9]{40}$/);
    expect(key).toMatchObject({
      plan: 'pro',
      limits: { requests_per_minute: 5, tokens_per_minute: 2_000_000 },
      overrides: { requests_per_minute: 5 },
      routing_policy: 'cheapest',
    });
    expect((await admin(edges[0]!, 'GET', '', undefined, '')).status).toBe(401);
    expect((await admin(edges[0]!, 'GET', '', undefined, 'not-the-admin-token-at-all-0123456789')).status).toBe(401);
    const withApiKey = await admin(edges[0]!, 'GET', '', undefined, key.secret);
    expect(withApiKey.status).toBe(403);
    expect(await withApiKey.json()).toMatchObject({ error: { type: 'permission_error', code: 'admin_token_required' } });

    const list = (await (await admin(edges[1]!, 'GET', '')).json()) as { object: string; data: Array<Record<string, unknown>> };
    expect(list.object).toBe('list');
    expect(list.data.find((entry) => entry.id === key.id)).toMatchObject({ name: 'managed', revoked: false });
    expect(JSON.stringify(list)).not.toContain('br-');
    const fetched = await admin(edges[1]!, 'GET', `/${key.id}`);
    expect(await fetched.json()).toMatchObject({ id: key.id, routing_policy: 'cheapest' });
    expect((await admin(edges[1]!, 'GET', '/key_0000000000000000')).status).toBe(404);

    const cleared = await admin(edges[1]!, 'PATCH', `/${key.id}`, { limits: { requests_per_minute: null }, routing_policy: null, name: 'renamed' });
    expect(await cleared.json()).toMatchObject({ name: 'renamed', limits: { requests_per_minute: 1_000 }, overrides: {}, routing_policy: null });
    const bad = await admin(edges[1]!, 'PATCH', `/${key.id}`, { limits: { requests_per_minute: -3 } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { param: 'limits.requests_per_minute' } });
  });

  it("sets a key's catalog fallbacks default and clears it back to the plan's", async () => {
    const key = await createKey(edges[0]!, { plan: 'pro', catalog_fallbacks: true });
    expect(key).toMatchObject({ plan: 'pro', catalog_fallbacks: true, overrides: { catalog_fallbacks: true } });
    expect(await (await admin(edges[1]!, 'GET', `/${key.id}`)).json()).toMatchObject({ catalog_fallbacks: true, overrides: { catalog_fallbacks: true } });
    const off = (await (await admin(edges[1]!, 'PATCH', `/${key.id}`, { plan: 'enterprise', catalog_fallbacks: false })).json()) as Record<string, unknown>;
    expect(off).toMatchObject({ plan: 'enterprise', catalog_fallbacks: false, overrides: { catalog_fallbacks: false } });
    const cleared = (await (await admin(edges[1]!, 'PATCH', `/${key.id}`, { catalog_fallbacks: null })).json()) as {
      catalog_fallbacks: boolean;
      overrides: Record<string, unknown>;
    };
    expect(cleared.catalog_fallbacks).toBe(true);
    expect(cleared.overrides).not.toHaveProperty('catalog_fallbacks');
    const plain = await createKey(edges[0]!, { plan: 'starter' });
    expect(plain).toMatchObject({ catalog_fallbacks: false, overrides: {} });
    const bad = await admin(edges[0]!, 'PATCH', `/${key.id}`, { catalog_fallbacks: 'yes' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { param: 'catalog_fallbacks' } });
    const badCreate = await admin(edges[0]!, 'POST', '', { plan: 'pro', catalog_fallbacks: null });
    expect(badCreate.status).toBe(400);
  });
});

describe('Redis stopped mid-run', () => {
  let cluster: Cluster;
  let redis: ChildProcess | undefined;
  let port: number;
  let folder: string;

  function startRedis(): ChildProcess {
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', folder], {
      stdio: 'ignore',
    });
    return child;
  }

  beforeAll(async () => {
    port = await freePort();
    folder = mkdtempSync(join(tmpdir(), 'rate-limits-redis-'));
    redis = startRedis();
    await eventually(
      () =>
        spawnSync('redis-cli', ['-p', String(port), 'ping'])
          .stdout?.toString()
          .trim() === 'PONG',
      'our redis-server to answer',
      10_000,
      50,
    );
    // A Redis of its own, with no replica to wait for.
    cluster = await startCluster({ plan: 'starter', env: { REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_WAIT_REPLICAS: '0', CATALOG_PATH: catalog() } });
  });

  afterAll(async () => {
    await cluster?.stop();
    await stopProcess(redis);
  });

  it('answers 503 while Redis is down, never an unmetered 200, and recovers without a restart', async () => {
    const origin = cluster.baseUrl.replace(/\/v1$/, '');
    expect((await complete(origin, cluster.apiKey)).status).toBe(200);

    // SHUTDOWN SAVE writes the keys to disk, so the Redis that comes back still knows them.
    spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'save']);
    await eventually(() => redis!.exitCode !== null || redis!.signalCode !== null, 'redis to stop', 10_000);
    for (let index = 0; index < 5; index += 1) {
      const response = await complete(origin, cluster.apiKey);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(await response.json()).toMatchObject({ error: { code: 'auth_unavailable', type: 'service_unavailable_error' } });
    }

    redis = startRedis();
    const recovered = await eventually(
      async () => {
        const response = await complete(origin, cluster.apiKey);
        return response.status === 200 ? response : undefined;
      },
      'the gateway to serve again once Redis is back',
      15_000,
      200,
    );
    // Metered again: the request counted (the earlier 200 and this one; the 503s did not).
    expect(recovered.headers.get('x-ratelimit-remaining-requests')).toBe('58');
  }, 60_000);
});
