/**
 * The usage API through the whole cluster: after a known set of requests from two keys over four
 * models (whole, streamed, cancelled, failed, answered by a fallback, chosen by `auto`), every
 * bucket and total of /v1/usage and /admin/v1/usage is exact to the token and the pico-dollar,
 * and a key reads only its own usage. Expected values come from what the client itself received
 * (usage in each answer, priced with the catalog's prices), never from the gateway's own report.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { costPicoUsd, loadCatalog, type Catalog } from '@gateway/catalog';
import { eventually, type FakeUpstream, replayJson, replaySse, startFakeUpstream, fixture } from '@gateway/testing';
import type { UsageResult } from '../../services/edge/src/routes/admin/admin-api-schemas.js';
import { fakeModelEntry, SIM_MINI_ENTRY, startCluster, writeCatalog, type Cluster } from './cluster.js';

const ADMIN_TOKEN = 'admin-token-for-the-usage-tests-0123456789abcdef';
const KEY_VARIABLE = 'USAGE_UPSTREAM_API_KEY';
let cluster: Cluster;
let catalog: Catalog;
const upstreams: FakeUpstream[] = [];

/** One result of a usage page (a bucket's group, or the totals), as the edge writes it. */
type Result = Omit<UsageResult, 'object'>;
/** What one request should add to its key's and model's buckets: a result's counts, the cost exact. */
interface Expected extends Omit<Result, 'key_id' | 'model' | 'plan' | 'cost_pico_usd' | 'cost_usd' | 'cache_hits' | 'saved_cost_usd' | 'saved_cost_pico_usd'> {
  key: string;
  model: string;
  cost: bigint;
}
const expected: Expected[] = [];
const keys: Record<'a' | 'b', { id: string; secret: string }> = {} as never;
/** The error codes the failed requests were answered with. */
const failedCodes: string[] = [];

function add(
  key: string,
  model: string,
  usage:
    | { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number } | null }
    | null
    | undefined,
  extra: Partial<Expected> = {},
): void {
  const counted = {
    prompt_tokens: usage?.prompt_tokens ?? 0,
    completion_tokens: usage?.completion_tokens ?? 0,
    cached_tokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
    cache_write_tokens: usage?.prompt_tokens_details?.cache_write_tokens ?? 0,
  };
  expected.push({ key, model, requests: 1, ...counted, cost: costPicoUsd(catalog.byId.get(model)!.pricing, counted), errors: 0, fallbacks: 0, ...extra });
}

function sum(entries: readonly Expected[]) {
  const total = { requests: 0, prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cache_write_tokens: 0, cost_pico_usd: 0n, errors: 0, fallbacks: 0 };
  for (const entry of entries) {
    total.requests += entry.requests;
    total.prompt_tokens += entry.prompt_tokens;
    total.completion_tokens += entry.completion_tokens;
    total.cached_tokens += entry.cached_tokens;
    total.cache_write_tokens += entry.cache_write_tokens;
    total.cost_pico_usd += entry.cost;
    total.errors += entry.errors;
    total.fallbacks += entry.fallbacks;
  }
  return { ...total, cost_pico_usd: total.cost_pico_usd.toString(), cost_usd: Number(total.cost_pico_usd) / 1e12 };
}

interface Page {
  object: string;
  bucket: string;
  data: Array<{ object: string; start_time: number; end_time: number; results: Result[] }>;
  totals: Result;
}

/** The results of a page summed over its buckets, by the grouping's values. */
function byGroup(page: Page): Map<string, ReturnType<typeof sum>> {
  const groups = new Map<string, Expected[]>();
  for (const bucket of page.data) {
    for (const result of bucket.results) {
      const name = [result.key_id, result.model, result.plan].filter(Boolean).join('/');
      const list = groups.get(name) ?? [];
      list.push({
        key: '',
        model: '',
        requests: result.requests,
        prompt_tokens: result.prompt_tokens,
        completion_tokens: result.completion_tokens,
        cached_tokens: result.cached_tokens,
        cache_write_tokens: result.cache_write_tokens,
        cost: BigInt(result.cost_pico_usd),
        errors: result.errors,
        fallbacks: result.fallbacks,
      });
      groups.set(name, list);
    }
  }
  return new Map([...groups].map(([name, list]) => [name, sum(list)]));
}

function expectedBy(name: (entry: Expected) => string, entries: readonly Expected[] = expected): Map<string, ReturnType<typeof sum>> {
  const groups = new Map<string, Expected[]>();
  for (const entry of entries) groups.set(name(entry), [...(groups.get(name(entry)) ?? []), entry]);
  return new Map([...groups].map(([group, list]) => [group, sum(list)]));
}

const origin = () => cluster.baseUrl.replace(/\/v1$/, '');
const since = Math.floor(Date.now() / 1000) - 3_600;

async function get(path: string, token: string): Promise<Response> {
  return fetch(`${origin()}${path}`, { headers: { authorization: `Bearer ${token}` } });
}

async function page(path: string, token: string): Promise<Page> {
  const response = await get(path, token);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as Page;
}

beforeAll(async () => {
  const good = await startFakeUpstream((request, response) =>
    (request.body.stream ? replaySse(fixture('stream-text.sse')) : replayJson(200, fixture('chat-completion.json')))(request, response),
  );
  const slow = await startFakeUpstream(replaySse(fixture('stream-text.sse'), { delayMs: 400 }));
  const broken = await startFakeUpstream(replayJson(500, fixture('error-500.json')));
  upstreams.push(good, slow, broken);
  const catalogPath = writeCatalog('usage', [
    SIM_MINI_ENTRY,
    fakeModelEntry(good.baseUrl, KEY_VARIABLE, 'good-model', []),
    fakeModelEntry(slow.baseUrl, KEY_VARIABLE, 'slow-model', []),
    fakeModelEntry(broken.baseUrl, KEY_VARIABLE, 'broken-model', ['sim-mini']),
  ]);
  catalog = loadCatalog(catalogPath);
  cluster = await startCluster({
    env: {
      CATALOG_PATH: catalogPath,
      [KEY_VARIABLE]: 'sk-test-usage',
      EDGE_ADMIN_TOKEN: ADMIN_TOKEN,
      EXECUTOR_RETRY_BASE_DELAY_MS: '5',
      EXECUTOR_RETRY_MAX_DELAY_MS: '20',
      // Breakers that never open: the broken model fails the same way every time.
      EXECUTOR_BREAKER_CONSECUTIVE_FAILURES: '1000',
      EXECUTOR_BREAKER_MINIMUM_CALLS: '1000',
      EXECUTOR_BREAKER_WINDOW: '1000',
    },
  });
  for (const [name, plan] of [
    ['a', 'pro'],
    ['b', 'starter'],
  ] as const) {
    const response = await fetch(`${origin()}/admin/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ plan, name: `usage ${name}` }),
    });
    keys[name] = (await response.json()) as { id: string; secret: string };
  }

  const a = new OpenAI({ baseURL: cluster.baseUrl, apiKey: keys.a.secret, maxRetries: 0 });
  const b = new OpenAI({ baseURL: cluster.baseUrl, apiKey: keys.b.secret, maxRetries: 0 });
  const hello = [{ role: 'user' as const, content: 'Hello there, how are you today?' }];
  type Answer = OpenAI.ChatCompletion & { gateway: { routed_to: string; tried?: unknown[] } };

  // Key a: whole and streamed answers of the good model, a simulated one, two failures, a fallback, a cancelled stream.
  const whole = (await a.chat.completions.create({ model: 'good-model', messages: hello })) as Answer;
  add(keys.a.id, whole.gateway.routed_to, whole.usage);
  let streamedUsage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of await a.chat.completions.create({ model: 'good-model', messages: hello, stream: true, stream_options: { include_usage: true } }))
    streamedUsage = chunk.usage ?? streamedUsage;
  add(keys.a.id, 'good-model', streamedUsage);
  const simulated = (await a.chat.completions.create({ model: 'sim-mini', messages: hello })) as Answer;
  add(keys.a.id, 'sim-mini', simulated.usage);
  for (const stream of [false, true]) {
    const failure = await a.chat.completions.create({ model: 'broken-model', messages: hello, stream }).then(
      () => undefined,
      (error: unknown) => error as InstanceType<typeof OpenAI.APIError>,
    );
    expect(failure?.status).toBeGreaterThanOrEqual(500);
    failedCodes.push(String(failure?.code));
    add(keys.a.id, 'broken-model', null, { errors: 1 });
  }
  const rescued = (await a.chat.completions.create({ model: 'broken-model', messages: hello, fallbacks: true } as never)) as Answer;
  expect(rescued.gateway).toMatchObject({ routed_to: 'sim-mini', tried: [expect.objectContaining({ model: 'broken-model' })] });
  add(keys.a.id, 'sim-mini', rescued.usage, { fallbacks: 1 });
  const abort = new AbortController();
  const stream = await a.chat.completions.create({ model: 'slow-model', messages: hello, stream: true }, { signal: abort.signal });
  let content = '';
  // The client leaves after the first content: the SDK ends the iteration (or throws, by version).
  await (async () => {
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? '';
      if (content) abort.abort();
    }
  })().catch(() => undefined);
  expect(content.length).toBeGreaterThan(0);

  // Key b: two simulated answers and one chosen by `auto`.
  for (let index = 0; index < 2; index += 1) {
    const answer = (await b.chat.completions.create({ model: 'sim-mini', messages: hello })) as Answer;
    add(keys.b.id, 'sim-mini', answer.usage);
  }
  const auto = (await b.chat.completions.create({ model: 'auto', messages: hello, fallbacks: true } as never)) as Answer;
  add(keys.b.id, auto.gateway.routed_to, auto.usage, { fallbacks: auto.gateway.tried?.length ? 1 : 0 });

  // The cancelled stream's tokens are the gateway's own count (the client never saw a usage):
  // taken from the latest requests, once everything is metered.
  const metered = async () =>
    (await page(`/v1/usage?start=${since}&bucket=hour`, keys.a.secret)).totals.requests +
    (await page(`/v1/usage?start=${since}&bucket=hour`, keys.b.secret)).totals.requests;
  await eventually(async () => (await metered()) === expected.length + 1, 'every request to be metered', 30_000, 200);
  const recent = (await (await get(`/admin/v1/requests?key_id=${keys.a.id}`, ADMIN_TOKEN)).json()) as {
    data: Array<{ outcome: string; model: string; prompt_tokens: number; completion_tokens: number }>;
  };
  const cancelled = recent.data.find((entry) => entry.outcome === 'cancelled')!;
  expect(cancelled).toMatchObject({ model: 'slow-model' });
  expect(cancelled.prompt_tokens).toBeGreaterThan(0);
  add(keys.a.id, 'slow-model', { prompt_tokens: cancelled.prompt_tokens, completion_tokens: cancelled.completion_tokens });
});

afterAll(async () => {
  await cluster?.stop();
  await Promise.all(upstreams.map((upstream) => upstream.close()));
});

describe('the usage API', () => {
  it('gives a key its own usage per model in hourly buckets, exact to the token and the pico-dollar', async () => {
    const hourly = await page(`/v1/usage?start=${since}&bucket=hour&group_by=model`, keys.a.secret);
    expect(hourly).toMatchObject({ object: 'page', bucket: 'hour', has_more: false });
    for (const bucket of hourly.data) {
      expect(bucket.start_time % 3_600).toBe(0);
      expect(bucket.end_time - bucket.start_time).toBe(3_600);
    }
    const mine = expected.filter((entry) => entry.key === keys.a.id);
    expect(byGroup(hourly)).toEqual(expectedBy((entry) => entry.model, mine));
    expect(hourly.totals).toMatchObject(sum(mine));
    expect(sum(mine)).toMatchObject({ errors: 2, fallbacks: 1 });
    // The same usage in daily buckets, and without grouping.
    const daily = await page(`/v1/usage?start=${since}&bucket=day`, keys.a.secret);
    expect(daily.data.every((bucket) => bucket.start_time % 86_400 === 0 && bucket.results.every((result) => result.model === undefined))).toBe(true);
    expect(daily.totals).toMatchObject(sum(mine));
  });

  it("never shows a key another key's usage", async () => {
    const theirs = await page(`/v1/usage?start=${since}&bucket=hour&group_by=model`, keys.b.secret);
    expect(theirs.totals).toMatchObject(sum(expected.filter((entry) => entry.key === keys.b.id)));
    const refused = await get(`/v1/usage?start=${since}&key_id=${keys.a.id}`, keys.b.secret);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { param: 'key_id', code: 'unknown_parameter' } });
    expect((await get(`/v1/usage?start=${since}&group_by=key`, keys.b.secret)).status).toBe(400);
  });

  it("gives the admin every key's usage by key and model, and by plan", async () => {
    const both = await page(`/admin/v1/usage?start=${since}&bucket=hour&group_by=key,model`, ADMIN_TOKEN);
    const ours = new Map([...byGroup(both)].filter(([name]) => name.startsWith(keys.a.id) || name.startsWith(keys.b.id)));
    expect(ours).toEqual(expectedBy((entry) => `${entry.key}/${entry.model}`));
    const plans = byGroup(await page(`/admin/v1/usage?start=${since}&bucket=day&group_by=plan&key_id=${keys.b.id}`, ADMIN_TOKEN));
    expect(plans).toEqual(new Map([['starter', sum(expected.filter((entry) => entry.key === keys.b.id))]]));
  });

  it('answers an empty range with an empty list, and a malformed query with a 400 naming the parameter', async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const path of [`/v1/usage?start=${now}&end=${now}`, `/v1/usage?start=${now - 40 * 86_400}&end=${now - 39 * 86_400}&bucket=hour`]) {
      const empty = await page(path, keys.a.secret);
      expect(empty.data).toEqual([]);
      expect(empty.totals).toMatchObject({ requests: 0, cost_pico_usd: '0' });
    }
    const cases: Array<[string, string]> = [
      ['/v1/usage', 'start'],
      ['/v1/usage?start=-5', 'start'],
      [`/v1/usage?start=${now}&end=${now - 1}`, 'end'],
      [`/v1/usage?start=${now}&bucket=week`, 'bucket'],
      [`/v1/usage?start=${now}&group_by=model,moon`, 'group_by'],
    ];
    for (const [path, param] of cases) {
      const response = await get(path, keys.a.secret);
      expect(response.status, path).toBe(400);
      expect(await response.json()).toMatchObject({ error: { type: 'invalid_request_error', param } });
    }
  });

  it('refuses usage without a valid key, and the admin views without the admin token', async () => {
    expect((await fetch(`${cluster.baseUrl}/usage?start=0`)).status).toBe(401);
    expect((await get('/v1/usage?start=bad', 'br-notakeyatallnotakeyatallnotakeyatall00')).status).toBe(401);
    expect((await get(`/admin/v1/usage?start=${since}`, keys.a.secret)).status).toBe(403);
    expect((await get('/admin/v1/requests', 'not-the-admin-token-not-the-admin-token')).status).toBe(401);
  });

  it('lists the latest requests newest first, with their routing, outcome and cost', async () => {
    const listed = (await (await get(`/admin/v1/requests?key_id=${keys.a.id}&limit=200`, ADMIN_TOKEN)).json()) as {
      data: Array<{ created_at: number; outcome: string; model: string; fallbacks: number; error_code: string | null; cost_usd: number }>;
    };
    expect(listed.data).toHaveLength(expected.filter((entry) => entry.key === keys.a.id).length);
    expect(listed.data.map((entry) => entry.created_at)).toEqual([...listed.data.map((entry) => entry.created_at)].sort((x, y) => y - x));
    expect(listed.data.filter((entry) => entry.outcome === 'failed').map((entry) => [entry.model, entry.error_code])).toEqual(
      [...failedCodes].reverse().map((code) => ['broken-model', code]),
    );
    expect(listed.data.filter((entry) => entry.fallbacks > 0).map((entry) => entry.model)).toEqual(['sim-mini']);
    const routed = (await (await get(`/admin/v1/requests?key_id=${keys.b.id}&limit=1`, ADMIN_TOKEN)).json()) as {
      data: Array<{ requested_model: string; auto: { score: number; tier: string; policy: string } | null }>;
    };
    expect(routed.data[0]).toMatchObject({
      requested_model: 'auto',
      auto: { score: expect.any(Number), tier: expect.stringMatching(/^(economy|standard|premium)$/), policy: expect.any(String) },
    });
    const all = (await (await get('/admin/v1/requests?limit=5', ADMIN_TOKEN)).json()) as { data: unknown[] };
    expect(all.data).toHaveLength(5);
    expect((await get('/admin/v1/requests?limit=500', ADMIN_TOKEN)).status).toBe(400);
  });

  it("shows each model's health as the router reports it", async () => {
    const models = (await (await get('/admin/v1/models', ADMIN_TOKEN)).json()) as { data: Array<{ id: string; available: boolean; provider: string }> };
    expect(models.data.map((model) => model.id).sort()).toEqual(['broken-model', 'good-model', 'sim-mini', 'slow-model']);
    expect(models.data.find((model) => model.id === 'sim-mini')).toMatchObject({ available: true, provider: 'simulated' });
  });
});
