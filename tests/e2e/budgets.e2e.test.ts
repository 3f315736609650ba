/**
 * Budgets through the whole cluster: a key with a tiny daily budget gets exactly the requests its
 * budget covers, across two edges, then 429 `insufficient_quota` (OpenAI's answer when credit runs
 * out) with the time until 00:00 UTC; a monthly budget answers with no Retry-After; raising the
 * budget through the admin API lets the key through at its next request; one budget and one rate
 * limit are spent across chat completions, the Responses API and the Messages API alike, each API
 * refusing in its own envelope. The model is an
 * OpenAI-compatible upstream replaying one fixture, so every request costs the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { eventually, type FakeUpstream, replayJson, startFakeUpstream, fixture } from '@gateway/testing';
import { fixtureAnswerCost } from './fixture-cost.js';
import { fakeModelEntry, SIM_MINI_ENTRY, startCluster, startSecondEdge, writeCatalog, type Cluster } from './cluster.js';

const ADMIN_TOKEN = 'admin-token-for-the-budget-tests-0123456789abcdef';
const KEY_VARIABLE = 'BUDGET_UPSTREAM_API_KEY';
let cluster: Cluster;
let second: Awaited<ReturnType<typeof startSecondEdge>>;
let upstream: FakeUpstream;
let cost: bigint;

beforeAll(async () => {
  upstream = await startFakeUpstream(replayJson(200, fixture('chat-completion.json')));
  // Priced at 1 USD per million tokens of every kind, so that an answer costs whole micro-dollars,
  // the unit budgets are set in: a budget of exactly three answers is expressible.
  const entry = fakeModelEntry(upstream.baseUrl, KEY_VARIABLE, 'metered-model', [], 'input: "1", cached_input: "1", output: "1"');
  const catalogPath = writeCatalog('budgets', [SIM_MINI_ENTRY, entry]);
  cost = fixtureAnswerCost(catalogPath, 'metered-model');
  expect(cost % 1_000_000n).toBe(0n);
  cluster = await startCluster({ env: { CATALOG_PATH: catalogPath, [KEY_VARIABLE]: 'sk-test-budgets', EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
  second = await startSecondEdge(cluster, { CATALOG_PATH: catalogPath, EDGE_ADMIN_TOKEN: ADMIN_TOKEN });
});

afterAll(async () => {
  await second?.stop();
  await cluster?.stop();
  await upstream?.close();
});

const origin = () => cluster.baseUrl.replace(/\/v1$/, '');

async function admin(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${origin()}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.status, await response.clone().text()).toBeLessThan(300);
  return (await response.json()) as Record<string, unknown>;
}

function complete(baseUrl: string, secret: string): Promise<Response> {
  return fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'metered-model', messages: [{ role: 'user', content: 'Hello' }] }),
  });
}

/** The key's usage as metering has it, read with the key itself. */
async function meteredRequests(secret: string): Promise<number> {
  const response = await fetch(`${cluster.baseUrl}/usage?start=${Math.floor(Date.now() / 1000) - 7_200}&bucket=day`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  return ((await response.json()) as { totals: { requests: number } }).totals.requests;
}

/** A request to `metered-model` on each API the edge speaks, and how each API refuses it. */
function agentApis(secret: string): Array<{ send(baseUrl: string): Promise<Response>; expectRefusal(body: unknown, code: string): void }> {
  const post = (baseUrl: string, path: string, headers: Record<string, string>, body: unknown) =>
    fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const openAiRefusal = (body: unknown, code: string) => expect((body as { error: { code: string } }).error.code).toBe(code);
  return [
    { send: (baseUrl) => complete(baseUrl, secret), expectRefusal: openAiRefusal },
    {
      send: (baseUrl) => post(baseUrl, '/responses', { authorization: `Bearer ${secret}` }, { model: 'metered-model', input: 'Hello' }),
      expectRefusal: openAiRefusal,
    },
    {
      send: (baseUrl) =>
        post(
          baseUrl,
          '/messages',
          { 'x-api-key': secret, 'anthropic-version': '2023-06-01' },
          { model: 'metered-model', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] },
        ),
      // Anthropic's envelope has no code: a spent budget and a rate limit are both its rate_limit_error.
      expectRefusal: (body) => expect(body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', message: expect.any(String) } }),
    },
  ];
}

/** USD as the admin API takes it: what `requests` requests cost. */
function usdFor(requests: number): number {
  return Number(cost * BigInt(requests)) / 1e12;
}

describe('budgets', () => {
  it('gives a key exactly the requests its daily budget covers across two edges, then 429 insufficient_quota until 00:00 UTC', async () => {
    const key = (await admin('POST', '/keys', { plan: 'pro', name: 'tiny budget', budgets: { daily_usd: usdFor(3) } })) as {
      id: string;
      secret: string;
      budgets: { daily_usd: number };
    };
    expect(key.budgets.daily_usd).toBe(usdFor(3));
    const edges = [cluster.baseUrl, second.baseUrl];
    const remaining: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const response = await complete(edges[index % 2]!, key.secret);
      expect(response.status).toBe(200);
      remaining.push(response.headers.get('x-gateway-budget-remaining-usd') ?? '');
      // Each answer is metered before the next request starts: what "exact" is measured against.
      await eventually(async () => (await meteredRequests(key.secret)) === index + 1, 'the answer to be metered', 30_000, 100);
    }
    // What is left before each request, exactly: the budget minus what the earlier ones cost.
    expect(remaining).toEqual([3, 2, 1].map((left) => (Number(cost * BigInt(left)) / 1e12).toFixed(12).replace(/\.?0+$/, '')));

    for (const edge of edges) {
      const refused = await complete(edge, key.secret);
      expect(refused.status).toBe(429);
      const body = (await refused.json()) as { error: { type: string; code: string; message: string } };
      expect(body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
      expect(body.error.message).toMatch(/daily budget/);
      const untilMidnight = 86_400 - (Math.floor(Date.now() / 1000) % 86_400);
      expect(Math.abs(Number(refused.headers.get('retry-after')) - untilMidnight)).toBeLessThanOrEqual(2);
      expect(refused.headers.get('x-gateway-budget-remaining-usd')).toBe('0');
      expect(refused.headers.get('x-should-retry')).toBe('false');
    }
    // A burst over both edges once the budget is spent: none gets through.
    const burst = await Promise.all(Array.from({ length: 10 }, (_, index) => complete(edges[index % 2]!, key.secret)));
    expect(burst.map((response) => response.status)).toEqual(Array(10).fill(429));
    expect(upstream.requests.filter((request) => request.headers.authorization === 'Bearer sk-test-budgets')).toHaveLength(3);

    // The official client sees OpenAI's error for credit run out, and does not retry it.
    const client = new OpenAI({ baseURL: second.baseUrl, apiKey: key.secret, maxRetries: 2 });
    const error = await client.chat.completions
      .create({ model: 'metered-model', messages: [{ role: 'user', content: 'Hello' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('insufficient_quota');

    // Raising the budget lets the key through at its very next request, on any edge.
    await admin('PATCH', `/keys/${key.id}`, { budgets: { daily_usd: usdFor(4) } });
    expect((await complete(second.baseUrl, key.secret)).status).toBe(200);
  });

  it('refuses a key over its monthly budget with no Retry-After, and a key with no budget sends no budget header', async () => {
    const key = (await admin('POST', '/keys', { plan: 'pro', budgets: { monthly_usd: usdFor(1) } })) as { id: string; secret: string };
    expect((await complete(cluster.baseUrl, key.secret)).status).toBe(200);
    await eventually(async () => (await meteredRequests(key.secret)) === 1, 'the answer to be metered', 30_000, 100);
    const refused = await complete(second.baseUrl, key.secret);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBeNull();
    expect(refused.headers.get('x-should-retry')).toBe('false');
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/monthly budget/);

    const unlimited = (await admin('POST', '/keys', { plan: 'pro' })) as { secret: string; budgets: Record<string, unknown> };
    expect(unlimited.budgets).toEqual({ daily_usd: null, monthly_usd: null });
    const answered = await complete(cluster.baseUrl, unlimited.secret);
    expect(answered.status).toBe(200);
    expect(answered.headers.get('x-gateway-budget-remaining-usd')).toBeNull();
  });

  it('spends one budget and one rate limit across chat completions, the Responses API and the Messages API, each refusing in its own shape', async () => {
    const key = (await admin('POST', '/keys', { plan: 'pro', budgets: { daily_usd: usdFor(3) } })) as { secret: string };
    const calls = agentApis(key.secret);
    for (const [index, call] of calls.entries()) {
      expect((await call.send(cluster.baseUrl)).status).toBe(200);
      await eventually(async () => (await meteredRequests(key.secret)) === index + 1, 'the answer to be metered', 30_000, 100);
    }
    // Three answers, one on each API, spent the budget of three: each API now refuses.
    for (const call of calls) {
      const refused = await call.send(second.baseUrl);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('x-should-retry')).toBe('false');
      call.expectRefusal(await refused.json(), 'insufficient_quota');
    }

    // Two requests a minute, counted once whichever API carries them.
    const limited = (await admin('POST', '/keys', { plan: 'pro', limits: { requests_per_minute: 2 } })) as { secret: string };
    const [chat, responses, messages] = agentApis(limited.secret);
    expect((await chat!.send(cluster.baseUrl)).status).toBe(200);
    expect((await responses!.send(second.baseUrl)).status).toBe(200);
    const overLimit = await messages!.send(cluster.baseUrl);
    expect(overLimit.status).toBe(429);
    expect(Number(overLimit.headers.get('retry-after'))).toBeGreaterThan(0);
    messages!.expectRefusal(await overLimit.json(), 'rate_limit_exceeded');
  });

  it("refuses a malformed budget with the field named, and takes null back to the plan's", async () => {
    const response = await fetch(`${origin()}/admin/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'pro', budgets: { daily_usd: -1 } }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { param: string } }).error.param).toBe('budgets.daily_usd');
    const key = (await admin('POST', '/keys', { plan: 'pro', budgets: { daily_usd: 5, monthly_usd: 'unlimited' } })) as {
      id: string;
      overrides: Record<string, unknown>;
    };
    expect(key.overrides).toMatchObject({ daily_budget_usd: 5, monthly_budget_usd: 'unlimited' });
    const back = (await admin('PATCH', `/keys/${key.id}`, { budgets: { daily_usd: null } })) as {
      budgets: Record<string, unknown>;
      overrides: Record<string, unknown>;
    };
    expect(back.budgets).toEqual({ daily_usd: null, monthly_usd: null });
    expect(back.overrides).not.toHaveProperty('daily_budget_usd');
  });
});
