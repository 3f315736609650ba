/**
 * The semantic response cache in a running cluster, as a platform team turns it on for a model:
 * the cache settings name a catalog embedding model (the simulated one, whose vectors of texts
 * that share words are near) and a threshold; a paraphrase of a kept question over the threshold
 * is answered from the cache with the original's content and its similarity, through the official
 * `openai` and `@anthropic-ai/sdk` clients, whole and streamed; a different question under the
 * threshold, the same question with other tools or an earlier turn of its own, and another team's
 * key all reach the model; 50 paraphrases asked at once are all hits; each question's embedding
 * is metered to the key as an embedding; a cache service killed and started again still finds the
 * questions it kept (its index rebuilt from its Redis); and the admin API refuses a semantic model
 * that is no embedding model.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { eventually, type FakeUpstream, startFakeUpstream } from '@gateway/testing';
import { fakeModelEntry, stopProcess, writeCatalog } from './cluster.js';
import { createKey as createAdminKey, createTeam as createAdminTeam } from './admin-keys.js';
import { ClusterFixture } from './cluster-fixture.js';
import { NumberedAnswers } from './numbered-answers.js';
import { adminApi } from './mcp-clients.js';

const ADMIN_TOKEN = 'semantic-cache-e2e-admin-token-0123456789';
const KEY_VARIABLE = 'SEMANTIC_CACHE_E2E_UPSTREAM_API_KEY';
const MODEL = 'semantic-model';
const EMBEDDING_MODEL = 'sim-embedding';
/** Over the simulated embedding's similarity of "the capital city of France" to "the capital of France" (0.91), under "of Spain"'s (0.82). */
const THRESHOLD = 0.85;

const SIMULATED_EMBEDDING = `  - id: ${EMBEDDING_MODEL}
    provider: simulated
    kind: embedding
    owned_by: gateway
    created: 1735689600
    upstream: { model: ${EMBEDDING_MODEL} }
    pricing: { input: "0.02" }
    context_window: 8192
    embedding: { dimensions: 1536, shortenable: true }
    simulation: { time_to_first_token_ms: 2, tokens_per_second: 0 }`;

const gateway = new ClusterFixture();
const admin = adminApi(() => gateway.origin, ADMIN_TOKEN);
let upstream: FakeUpstream;
type Key = { id: string; secret: string };
const keys: Record<string, Key> = {};
/** The fake model: each answer names its number, so a test counts its calls. */
const fakeModel = new NumberedAnswers();

type GatewayCache = { status: string; age_ms?: number; similarity?: number };
const cacheOf = (answer: unknown): GatewayCache | undefined => (answer as { gateway?: { cache?: GatewayCache } }).gateway?.cache;
const openai = (key: Key) => new OpenAI({ baseURL: gateway.cluster.baseUrl, apiKey: key.secret, maxRetries: 0 });
const ask = (key: Key, content: string, extra: Record<string, unknown> = {}) =>
  openai(key).chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content }],
    temperature: 0,
    ...extra,
  } as never) as Promise<OpenAI.ChatCompletion>;
const contentOf = (answer: OpenAI.ChatCompletion) => answer.choices[0]?.message.content;

/** An Enterprise key, in `team` when given. */
const createKey = (team?: string): Promise<Key> => createAdminKey(gateway.origin, ADMIN_TOKEN, { plan: 'enterprise', ...(team && { team_id: team }) });
const createTeam = (name: string): Promise<string> => createAdminTeam(gateway.origin, ADMIN_TOKEN, name);

beforeAll(async () => {
  upstream = await startFakeUpstream(fakeModel.handle);
  const catalog = writeCatalog('semantic-cache', [fakeModelEntry(upstream.baseUrl, KEY_VARIABLE, MODEL, []), SIMULATED_EMBEDDING]);
  await gateway.start({
    cache: true,
    env: {
      CATALOG_PATH: catalog,
      [KEY_VARIABLE]: 'sk-semantic-cache-e2e',
      EDGE_ADMIN_TOKEN: ADMIN_TOKEN,
      // A loaded machine must not turn the hits these tests count into misses.
      EDGE_CACHE_LOOKUP_DEADLINE_MS: '1000',
      EDGE_CACHE_SEMANTIC_DEADLINE_MS: '10000',
    },
  });
  const [teamA, teamB] = await Promise.all([createTeam('semantic team a'), createTeam('semantic team b')]);
  for (const [name, team] of [
    ['a', teamA],
    ['a2', teamA],
    ['b', teamB],
    ['metered', teamB],
  ] as const)
    keys[name] = await createKey(team);
  const put = await admin('PUT', `/admin/v1/cache/settings/model:${MODEL}`, {
    enabled: true,
    ttl_seconds: 600,
    semantic_model: EMBEDDING_MODEL,
    semantic_threshold: THRESHOLD,
  });
  expect(put.status, await put.clone().text()).toBe(200);
  expect(await put.json()).toMatchObject({ target: `model:${MODEL}`, semantic_model: EMBEDDING_MODEL, semantic_threshold: THRESHOLD });
  // The edge has the settings once an answer says what the cache did.
  await vi.waitFor(async () => expect(cacheOf(await ask(keys.metered!, 'Are you there?'))).toBeDefined(), { timeout: 30_000, interval: 100 });
}, 180_000);

afterAll(async () => {
  await gateway.stop(upstream);
});

describe('the semantic cache', () => {
  it('answers a paraphrase over the threshold from the cache, with its similarity; a question under it reaches the model', async () => {
    const from = fakeModel.answered;
    const first = await ask(keys.a!, 'What is the capital of France?');
    expect(cacheOf(first)).toEqual({ status: 'miss' });
    // Kept once the answer left: a near question finds it on the next request.
    const near = await vi.waitFor(async () => {
      const answer = await ask(keys.a!, 'What is the capital city of France?');
      expect(cacheOf(answer)?.status).toBe('hit');
      return answer;
    });
    expect(contentOf(near)).toBe(contentOf(first));
    expect(cacheOf(near)?.similarity).toBeGreaterThanOrEqual(THRESHOLD);
    expect(cacheOf(near)?.similarity).toBeLessThan(1);
    // Case and punctuation: the same words, the same question.
    const same = cacheOf(await ask(keys.a2!, 'what is the capital of france'));
    expect(same?.status).toBe('hit');
    expect(same?.similarity).toBeGreaterThan(0.999);
    expect(fakeModel.answered).toBe(from + 1);
    // Another question that shares most words, and one that shares none: under the threshold.
    const spain = await ask(keys.a!, 'What is the capital of Spain?');
    expect(cacheOf(spain)).toEqual({ status: 'miss' });
    expect(contentOf(spain)).not.toBe(contentOf(first));
    expect(cacheOf(await ask(keys.a!, 'How do volcanoes form under the ocean?'))).toEqual({ status: 'miss' });
    expect(fakeModel.answered).toBe(from + 3);
  });

  it('never answers across teams, tools or an earlier turn: everything but the question matches exactly', async () => {
    const question = 'How long does shipping to Canada take?';
    const kept = await ask(keys.a!, question);
    await vi.waitFor(async () => expect(cacheOf(await ask(keys.a!, 'How long does shipping to Canada take, roughly?'))?.status).toBe('hit'));
    const from = fakeModel.answered;
    // Another team: its own scope.
    const other = await ask(keys.b!, question);
    expect(cacheOf(other)).toEqual({ status: 'miss' });
    expect(contentOf(other)).not.toBe(contentOf(kept));
    // The same words with a tool offered, or after an earlier turn: another context.
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }];
    expect(cacheOf(await ask(keys.a!, question, { tools }))).toEqual({ status: 'miss' });
    const withTurn = await openai(keys.a!).chat.completions.create({
      model: MODEL,
      temperature: 0,
      messages: [
        { role: 'user', content: 'I live in Toronto.' },
        { role: 'assistant', content: 'Noted.' },
        { role: 'user', content: question },
      ],
    });
    expect(cacheOf(withTurn)).toEqual({ status: 'miss' });
    expect(fakeModel.answered).toBe(from + 3);
  });

  it('streams a semantic hit as chunks the client parses; the Messages API finds near questions of its own', async () => {
    const from = fakeModel.answered;
    const first = await ask(keys.a!, 'Which ocean is the largest?');
    await vi.waitFor(async () => {
      const stream = await openai(keys.a!).chat.completions.create({
        model: MODEL,
        temperature: 0,
        stream: true,
        messages: [{ role: 'user', content: 'Which ocean is the largest one?' }],
      });
      let text = '';
      let cache: GatewayCache | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
        cache = cacheOf(chunk) ?? cache;
      }
      expect(cache?.status).toBe('hit');
      expect(text).toBe(contentOf(first));
    });
    const anthropic = new Anthropic({ baseURL: gateway.origin, apiKey: keys.a!.secret, maxRetries: 0 });
    const message = (content: string) => anthropic.messages.create({ model: MODEL, max_tokens: 64, temperature: 0, messages: [{ role: 'user', content }] });
    const kept = await message('Which desert is the largest?');
    expect(cacheOf(kept)).toEqual({ status: 'miss' });
    const hit = await vi.waitFor(async () => {
      const answer = await message('Which desert is the largest one?');
      expect(cacheOf(answer)?.status).toBe('hit');
      return answer;
    });
    expect(hit.content).toEqual(kept.content);
    expect(fakeModel.answered).toBe(from + 2);
  });

  it('answers 50 different paraphrases asked at once from one kept answer, none reaching the model', async () => {
    const question = 'How many moons does the planet Jupiter have in total today?';
    const kept = await ask(keys.a2!, question);
    // Found by a near question once kept; then the crowd, every request a paraphrase of its own.
    await vi.waitFor(async () => expect(cacheOf(await ask(keys.a2!, `${question} Variant zero.`))?.status).toBe('hit'));
    const from = fakeModel.answered;
    const answers = await Promise.all(Array.from({ length: 50 }, (_, index) => ask(keys.a2!, `${question} Variant ${index + 1}.`)));
    expect(answers.map((answer) => cacheOf(answer)?.status)).toEqual(answers.map(() => 'hit'));
    expect(new Set(answers.map(contentOf))).toEqual(new Set([contentOf(kept)]));
    expect(fakeModel.answered).toBe(from);
  });

  it("meters each question's embedding to the key, as an embedding of the semantic model", async () => {
    const start = Math.floor(Date.now() / 1000) - 3_600;
    await ask(keys.metered!, 'What is the tallest mountain?');
    await ask(keys.metered!, 'What is the tallest mountain on Earth?');
    await eventually(async () => {
      const response = await fetch(`${gateway.origin}/v1/usage?start=${start}&bucket=day&group_by=model`, {
        headers: { authorization: `Bearer ${keys.metered!.secret}` },
      });
      const page = (await response.json()) as { data: Array<{ results: Array<{ model: string; requests: number; input_tokens?: number }> }> };
      const rows = page.data.flatMap((bucket) => bucket.results);
      const embeddings = rows.find((row) => row.model === EMBEDDING_MODEL);
      // The first request of beforeAll, and these two: three questions embedded.
      return embeddings !== undefined && embeddings.requests === 3;
    }, "the questions' embeddings to be metered to the key");
  });

  it('finds the questions it kept after the cache service is killed and started again', async () => {
    const kept = await ask(keys.a!, 'What colour is the sky on Mars?');
    await vi.waitFor(async () => expect(cacheOf(await ask(keys.a!, 'What colour is the sky on Mars, usually?'))?.status).toBe('hit'));
    const from = fakeModel.answered;
    const { cluster } = gateway;
    cluster.processes.cache.kill('SIGKILL');
    await stopProcess(cluster.processes.cache);
    cluster.restart('cache');
    await eventually(
      async () => (await fetch(`http://127.0.0.1:${cluster.ports.cacheMetrics}/readyz`).catch(() => undefined))?.status === 200,
      'the cache service to be ready again',
      60_000,
    );
    // The edge reaches the cache again once an exact question it keeps from now on is a hit.
    let probe = 0;
    await vi.waitFor(
      async () => {
        probe += 1;
        const question = `Probe ${probe}: is the cache back?`;
        await ask(keys.b!, question);
        expect(cacheOf(await ask(keys.b!, question))?.status).toBe('hit');
      },
      { timeout: 60_000, interval: 200 },
    );
    // Then the near question, once: found in the index the new process rebuilt from its Redis.
    const asked = fakeModel.answered;
    const again = await ask(keys.a!, 'What colour is the sky on Mars, usually?');
    expect(cacheOf(again)?.status).toBe('hit');
    expect(fakeModel.answered).toBe(asked);
    expect(contentOf(again)).toBe(contentOf(kept));
    expect(fakeModel.answered).toBeGreaterThan(from);
  });

  it('refuses a semantic model that is not an embedding model of the catalog, naming the field', async () => {
    const refused = await admin('PUT', '/admin/v1/cache/settings/global', { semantic_model: MODEL });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { param: 'semantic_model', code: 'invalid_value' } });
    const out = await admin('PUT', '/admin/v1/cache/settings/global', { semantic_threshold: 0.2 });
    expect(out.status).toBe(400);
    expect(((await out.json()) as { error: { message: string } }).error.message).toMatch(/semantic_threshold/);
  });
});
