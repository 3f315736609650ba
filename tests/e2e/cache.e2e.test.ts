/**
 * The response cache in a running cluster, as a platform team turns it on and its users' clients
 * meet it: the official `openai` and `@anthropic-ai/sdk` clients get a miss and then a hit, whole
 * and streamed, on chat completions, Responses (HTTP and WebSocket) and Messages, the streamed hit
 * parsing as the original did, and embeddings with identical vectors; two teams never see each
 * other's answers, and a team's scope follows its settings on the next request; sampling, tools and the
 * caller's Cache-Control decide what is looked up; 100 identical requests at once reach the model
 * a handful of times and are each metered once; a purge through the admin API empties a team's
 * scope; and a cache whose Redis is stopped under load fails no request.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { eventually, type FakeUpstream, fakeOpenAiEmbeddings, startFakeUpstream } from '@gateway/testing';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { fakeModelEntry, metric, openAiEmbeddingEntry, writeCatalog } from './cluster.js';
import { createKey as createAdminKey, createTeam as createAdminTeam } from './admin-keys.js';
import { ClusterFixture } from './cluster-fixture.js';
import { NumberedAnswers } from './numbered-answers.js';
import { adminApi } from './mcp-clients.js';

const ADMIN_TOKEN = 'cache-e2e-admin-token-0123456789abcdef';
const KEY_VARIABLE = 'CACHE_E2E_UPSTREAM_API_KEY';
const MODEL = 'cached-model';
const EMBEDDING_MODEL = 'cached-embedding';

const gateway = new ClusterFixture();
const admin = adminApi(() => gateway.origin, ADMIN_TOKEN);
let upstream: FakeUpstream;
let embeddingsUpstream: FakeUpstream;
type Key = { id: string; secret: string };
let teamA: string;
let teamB: string;
const keys: Record<string, Key> = {};
/** The fake model: each answer names its number, so a test counts its calls. */
const fakeModel = new NumberedAnswers();

const openai = (key: Key) => new OpenAI({ baseURL: gateway.cluster.baseUrl, apiKey: key.secret, maxRetries: 0 });
const anthropic = (key: Key) => new Anthropic({ baseURL: gateway.origin, apiKey: key.secret, maxRetries: 0 });
type GatewayCache = { status: string; age_ms?: number };
const cacheOf = (answer: unknown): GatewayCache | undefined => (answer as { gateway?: { cache?: GatewayCache } }).gateway?.cache;
const costOf = (answer: unknown): number | undefined => (answer as { gateway?: { cost_usd?: number } }).gateway?.cost_usd;
const ask = (key: Key, content: string, extra: Record<string, unknown> = {}) =>
  openai(key).chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content }],
    temperature: 0,
    ...extra,
  } as never) as Promise<OpenAI.ChatCompletion>;

/** A streamed chat answer's text, its chunks' ids, and the `gateway` of its last chunk. */
async function askStreamed(key: Key, content: string): Promise<{ text: string; ids: Set<string>; cache: GatewayCache | undefined }> {
  const stream = await openai(key).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }], temperature: 0, stream: true });
  let text = '';
  const ids = new Set<string>();
  let cache: GatewayCache | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    ids.add(chunk.id);
    cache = cacheOf(chunk) ?? cache;
  }
  return { text, ids, cache };
}

/** An Enterprise key, in `team` when given. */
const createKey = (team?: string): Promise<Key> => createAdminKey(gateway.origin, ADMIN_TOKEN, { plan: 'enterprise', ...(team && { team_id: team }) });
const createTeam = (name: string): Promise<string> => createAdminTeam(gateway.origin, ADMIN_TOKEN, name);

beforeAll(async () => {
  [upstream, embeddingsUpstream] = await Promise.all([startFakeUpstream(fakeModel.handle), startFakeUpstream(fakeOpenAiEmbeddings({ key: 'sk-cache-e2e' }))]);
  const catalog = writeCatalog('cache', [
    fakeModelEntry(upstream.baseUrl, KEY_VARIABLE, MODEL, []),
    openAiEmbeddingEntry(EMBEDDING_MODEL, embeddingsUpstream.baseUrl, KEY_VARIABLE, { inputPrice: '0.13', dimensions: 8 }),
  ]);
  await gateway.start({
    cache: true,
    env: {
      CATALOG_PATH: catalog,
      [KEY_VARIABLE]: 'sk-cache-e2e',
      EDGE_ADMIN_TOKEN: ADMIN_TOKEN,
      // A loaded machine must not turn the hits these tests count into misses.
      EDGE_CACHE_LOOKUP_DEADLINE_MS: '1000',
    },
  });
  [teamA, teamB] = await Promise.all([createTeam('cache team a'), createTeam('cache team b')]);
  for (const [name, team] of [
    ['a', teamA],
    ['a2', teamA],
    ['b', teamB],
    ['solo', undefined],
    ['crowd', teamA],
    ['outage', teamB],
  ] as const)
    keys[name] = await createKey(team);
  const put = await admin('PUT', '/admin/v1/cache/settings/global', { enabled: true, ttl_seconds: 600 });
  expect(put.status, await put.clone().text()).toBe(200);
  expect(await put.json()).toMatchObject({ object: 'cache.settings', target: 'global', enabled: true, ttl_seconds: 600 });
  // The edge has the settings once an answer says what the cache did.
  await vi.waitFor(async () => expect(cacheOf(await ask(keys.solo!, 'Are you there?'))).toBeDefined(), { timeout: 30_000, interval: 100 });
}, 180_000);

afterAll(async () => {
  await gateway.stop(upstream, embeddingsUpstream);
});

describe('chat completions', () => {
  it('answer the same question a second time from the cache: no model call, the same content, a new id, free', async () => {
    const from = fakeModel.answered;
    const first = await ask(keys.a!, 'What is the capital of France?');
    expect(cacheOf(first)).toEqual({ status: 'miss' });
    expect(costOf(first)).toBeGreaterThan(0);
    const second = await ask(keys.a!, 'What is the capital of France?');
    expect(fakeModel.answered).toBe(from + 1);
    expect(second.choices[0]?.message.content).toBe(first.choices[0]?.message.content);
    expect(cacheOf(second)?.status).toBe('hit');
    expect(cacheOf(second)?.age_ms).toBeGreaterThanOrEqual(0);
    expect(second.id).not.toBe(first.id);
    expect(costOf(second)).toBe(0);
    expect(second.usage).toMatchObject({ prompt_tokens: first.usage?.prompt_tokens, completion_tokens: first.usage?.completion_tokens });
    // Another key of the same team shares the team's entries.
    expect(cacheOf(await ask(keys.a2!, 'What is the capital of France?'))?.status).toBe('hit');
    expect(fakeModel.answered).toBe(from + 1);
  });

  it('stream a hit as the chunks of a stream, which the client parses as it parsed the original', async () => {
    const from = fakeModel.answered;
    const whole = await ask(keys.a!, 'Name three rivers.');
    const streamedHit = await askStreamed(keys.a!, 'Name three rivers.');
    expect(streamedHit.text).toBe(whole.choices[0]?.message.content);
    expect(streamedHit.cache?.status).toBe('hit');
    expect(streamedHit.ids.size).toBe(1);
    // A streamed miss is kept once complete, and answers a whole request after it.
    const streamedMiss = await askStreamed(keys.a!, 'Name three mountains.');
    expect(streamedMiss.cache).toEqual({ status: 'miss' });
    await vi.waitFor(async () => {
      const hit = await ask(keys.a!, 'Name three mountains.');
      expect(cacheOf(hit)?.status).toBe('hit');
      expect(hit.choices[0]?.message.content).toBe(streamedMiss.text);
    });
    expect(fakeModel.answered).toBe(from + 2);
  });

  it('never answer one team with another team’s entry; the scope follows the team’s settings on the next request', async () => {
    const question = 'What is our refund policy?';
    const fromA = await ask(keys.a!, question);
    await vi.waitFor(async () => expect(cacheOf(await ask(keys.a!, question))?.status).toBe('hit'));
    const fromB = await ask(keys.b!, question);
    expect(cacheOf(fromB)).toEqual({ status: 'miss' });
    expect(fromB.choices[0]?.message.content).not.toBe(fromA.choices[0]?.message.content);
    // A key without a team is a scope of its own.
    expect(cacheOf(await ask(keys.solo!, question))).toEqual({ status: 'miss' });
    // Team A's keys each their own scope: a2 no longer finds what a kept.
    const perKey = await admin('PUT', `/admin/v1/cache/settings/team:${teamA}`, { scope: 'key' });
    expect(perKey.status, await perKey.clone().text()).toBe(200);
    await vi.waitFor(async () => expect(cacheOf(await ask(keys.a2!, question))).toEqual({ status: 'miss' }));
    // Both teams in one shared group: B finds what A keeps there, and A what B kept.
    for (const team of [teamA, teamB]) expect((await admin('PUT', `/admin/v1/cache/settings/team:${team}`, { scope: 'shared:support' })).status).toBe(200);
    const shared = await vi.waitFor(async () => {
      const answer = await ask(keys.a!, 'Where is the shared handbook?');
      expect(cacheOf(answer)).toEqual({ status: 'miss' });
      return answer;
    });
    await vi.waitFor(async () => {
      const fromGroup = await ask(keys.b!, 'Where is the shared handbook?');
      expect(cacheOf(fromGroup)?.status).toBe('hit');
      expect(fromGroup.choices[0]?.message.content).toBe(shared.choices[0]?.message.content);
    });
    for (const team of [teamA, teamB]) expect((await admin('DELETE', `/admin/v1/cache/settings/team:${team}`)).status).toBe(200);
    // Back in its own team's scope, A finds its own entry again, never B's.
    await vi.waitFor(async () => expect((await ask(keys.a!, question)).choices[0]?.message.content).toBe(fromA.choices[0]?.message.content));
  });

  it('look up only what the settings and the caller allow: sampling above the threshold, no-store and no-cache skip', async () => {
    const from = fakeModel.answered;
    const warm = await ask(keys.a!, 'Tell me a joke.', { temperature: 0.9 });
    expect(cacheOf(warm)).toEqual({ status: 'skip' });
    expect(cacheOf(await ask(keys.a!, 'Tell me a joke.', { temperature: 0.9 }))).toEqual({ status: 'skip' });
    expect(fakeModel.answered).toBe(from + 2);
    // A seed makes sampling repeatable: cached whatever the temperature.
    await ask(keys.a!, 'Tell me a joke.', { temperature: 0.9, seed: 42 });
    expect(cacheOf(await ask(keys.a!, 'Tell me a joke.', { temperature: 0.9, seed: 42 }))?.status).toBe('hit');
    expect(fakeModel.answered).toBe(from + 3);

    const client = openai(keys.a!);
    const withHeader = (value: string) =>
      client.chat.completions.create(
        { model: MODEL, messages: [{ role: 'user', content: 'Tell me a joke.' }], temperature: 0.9, seed: 42 },
        { headers: { 'cache-control': value } },
      );
    expect(cacheOf(await withHeader('no-store'))).toEqual({ status: 'skip' });
    expect(fakeModel.answered).toBe(from + 4);
    // no-cache asks the model and keeps its fresh answer for the next requests.
    const fresh = await withHeader('no-cache');
    expect(cacheOf(fresh)).toEqual({ status: 'skip' });
    expect(fakeModel.answered).toBe(from + 5);
    await vi.waitFor(async () =>
      expect((await ask(keys.a!, 'Tell me a joke.', { temperature: 0.9, seed: 42 })).choices[0]?.message.content).toBe(fresh.choices[0]?.message.content),
    );
  });

  it('never answer a request whose tools or response format differ with another’s entry', async () => {
    const from = fakeModel.answered;
    const tool = { type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } };
    await ask(keys.a!, 'Find the weather.', { tools: [tool] });
    expect(cacheOf(await ask(keys.a!, 'Find the weather.'))).toEqual({ status: 'miss' });
    expect(cacheOf(await ask(keys.a!, 'Find the weather.', { tools: [{ ...tool, function: { ...tool.function, name: 'search' } }] }))).toEqual({
      status: 'miss',
    });
    expect(cacheOf(await ask(keys.a!, 'Find the weather.', { response_format: { type: 'json_object' } }))).toEqual({ status: 'miss' });
    expect(fakeModel.answered).toBe(from + 4);
    expect(cacheOf(await ask(keys.a!, 'Find the weather.', { tools: [tool] }))?.status).toBe('hit');
  });
});

describe('the other APIs', () => {
  it('Responses over HTTP: a miss then a hit, whole and streamed', async () => {
    const client = openai(keys.a!);
    const from = fakeModel.answered;
    const first = await client.responses.create({ model: MODEL, input: 'Summarize the plot of Hamlet.', temperature: 0 });
    expect(cacheOf(first)).toEqual({ status: 'miss' });
    const second = await client.responses.create({ model: MODEL, input: 'Summarize the plot of Hamlet.', temperature: 0 });
    expect(cacheOf(second)?.status).toBe('hit');
    expect(second.output_text).toBe(first.output_text);
    expect(second.id).not.toBe(first.id);
    const stream = await client.responses.create({ model: MODEL, input: 'Summarize the plot of Hamlet.', temperature: 0, stream: true });
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(text).toBe(first.output_text);
    expect(completed?.status).toBe('completed');
    expect(JSON.stringify(completed?.output)).toContain(JSON.stringify(first.output_text).slice(1, -1));
    expect(fakeModel.answered).toBe(from + 1);
    // A hit is stored as any response is: a conversation continues from it.
    const next = await client.responses.create({ model: MODEL, input: 'And in one word?', previous_response_id: second.id, temperature: 0 });
    expect(next.output_text).toContain('Answer');
  });

  it('Responses over the WebSocket: a hit answers in the same event sequence', async () => {
    const from = fakeModel.answered;
    await openai(keys.a!).responses.create({ model: MODEL, input: 'Describe a lighthouse.', temperature: 0 });
    const socket = new WebSocket(`${gateway.origin.replace('http', 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${keys.a!.secret}` } });
    const events: Array<{ type: string; delta?: string; response?: { output?: unknown; gateway?: { cache?: GatewayCache } } }> = [];
    socket.on('message', (data) => events.push(JSON.parse(String(data))));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    socket.send(JSON.stringify({ type: 'response.create', model: MODEL, input: 'Describe a lighthouse.', temperature: 0 }));
    const completed = await eventually(() => events.find((event) => event.type === 'response.completed'), 'the response over the socket');
    socket.close();
    expect(events[0]?.type).toBe('response.created');
    expect(
      events
        .filter((event) => event.type === 'response.output_text.delta')
        .map((event) => event.delta)
        .join(''),
    ).toContain('Answer');
    expect(fakeModel.answered).toBe(from + 1);
    expect(JSON.stringify(completed)).toContain('"cache":{"status":"hit"');
  });

  it('Messages with the Anthropic client: a miss then a hit, whole and streamed', async () => {
    const client = anthropic(keys.a!);
    const from = fakeModel.answered;
    const request = { model: MODEL, max_tokens: 200, temperature: 0, messages: [{ role: 'user' as const, content: 'List the planets.' }] };
    const first = await client.messages.create(request);
    const second = await client.messages.create(request);
    expect(cacheOf(first)).toEqual({ status: 'miss' });
    expect(cacheOf(second)?.status).toBe('hit');
    expect(second.content).toEqual(first.content);
    const stream = client.messages.stream(request);
    const final = await stream.finalMessage();
    expect(final.content).toEqual(first.content);
    expect(final.stop_reason).toBe(first.stop_reason);
    expect(fakeModel.answered).toBe(from + 1);
  });

  it('embeddings: the same vectors, without a call to the provider', async () => {
    const client = openai(keys.a!);
    const from = embeddingsUpstream.requests.length;
    const first = await client.embeddings.create({ model: EMBEDDING_MODEL, input: ['alpha', 'beta'] });
    const second = await client.embeddings.create({ model: EMBEDDING_MODEL, input: ['alpha', 'beta'] });
    expect(second.data.map((item) => item.embedding)).toEqual(first.data.map((item) => item.embedding));
    expect(cacheOf(second)?.status).toBe('hit');
    const base64 = await client.embeddings.create({ model: EMBEDDING_MODEL, input: ['alpha', 'beta'], encoding_format: 'base64' });
    expect(cacheOf(base64)?.status).toBe('hit');
    expect(embeddingsUpstream.requests.length).toBe(from + 1);
  });
});

describe('under load and faults', () => {
  it('100 identical requests at once reach the model a handful of times, and each is metered once', async () => {
    const from = fakeModel.answered;
    const results = await Promise.all(Array.from({ length: 100 }, () => ask(keys.crowd!, 'What is the boiling point of water?')));
    expect(fakeModel.answered - from).toBeLessThanOrEqual(3);
    expect(new Set(results.map((result) => result.choices[0]?.message.content)).size).toBe(fakeModel.answered - from);
    const statuses = results.map((result) => cacheOf(result)?.status);
    expect(statuses.filter((status) => status === 'hit').length).toBeGreaterThanOrEqual(97);
    // Metered once each: the key's usage counts 100 requests.
    const start = Math.floor(Date.now() / 1000) - 3_600;
    await eventually(async () => {
      const response = await fetch(`${gateway.origin}/v1/usage?start=${start}&bucket=day&group_by=model`, {
        headers: { authorization: `Bearer ${keys.crowd!.secret}` },
      });
      const page = (await response.json()) as { data: Array<{ results: Array<{ model: string; requests: number }> }> };
      const row = page.data.flatMap((bucket) => bucket.results).find((result) => result.model === MODEL);
      return row?.requests === 100;
    }, 'the 100 requests to be metered once each');
  });

  it("a purge of a team through the admin API empties the team's scope, and only it", async () => {
    await ask(keys.a!, 'What is a purge?');
    await ask(keys.b!, 'What is a purge?');
    const purged = await admin('POST', '/admin/v1/cache/purge', { team_id: teamA });
    expect(purged.status, await purged.clone().text()).toBe(200);
    expect(await purged.json()).toEqual({ object: 'cache.purge', purged: [`scope:team:${teamA}`] });
    await vi.waitFor(async () => expect(cacheOf(await ask(keys.a!, 'What is a purge?'))?.status).not.toBe('hit'));
    expect(cacheOf(await ask(keys.b!, 'What is a purge?'))?.status).toBe('hit');
    const refused = await admin('POST', '/admin/v1/cache/purge', { team_id: teamA, all: true });
    expect(refused.status).toBe(400);
  });

  it('with its Redis stopped, every request is answered by its model, and the cache reports its Redis down', async () => {
    const cacheMetrics = `http://127.0.0.1:${gateway.cluster.ports.cacheMetrics}/metrics`;
    await ask(keys.outage!, 'Is the cache up?');
    await gateway.cluster.cacheRedis!.stop();
    try {
      const from = fakeModel.answered;
      const results = await Promise.all(Array.from({ length: 20 }, (_, index) => ask(keys.outage!, `Question ${index} while the cache is down?`)));
      expect(results.map((result) => cacheOf(result)?.status)).toEqual(results.map(() => 'miss'));
      expect(fakeModel.answered - from).toBe(20);
      expect(await metric(cacheMetrics, 'gateway_cache_redis_up')).toBe(0);
    } finally {
      await gateway.cluster.cacheRedis!.start();
    }
    await vi.waitFor(async () => expect(await metric(cacheMetrics, 'gateway_cache_redis_up')).toBe(1), { timeout: 30_000, interval: 200 });
    await ask(keys.outage!, 'Back again?');
    await vi.waitFor(async () => expect(cacheOf(await ask(keys.outage!, 'Back again?'))?.status).toBe('hit'), { timeout: 30_000, interval: 200 });
  });
});
