/**
 * Teams through the whole cluster, with THREE edges and TWO auth replicas sharing one Redis: the
 * limits of a team hold over all its keys exactly, whichever edge and auth replica decides each
 * request, because each decision is one script on the team's Redis slot. A team with a daily
 * budget gets exactly the requests the budget covers over two keys, then every key of the team is
 * refused with 429 `insufficient_quota` saying it is the team's budget; a team's requests per
 * minute hold exactly under a concurrent load over two keys and three edges; usage reads back by
 * team. The model is an OpenAI-compatible upstream replaying one fixture, so every request costs
 * the same. Under split load (concurrent clients over two keys and three edges) a team's budget
 * answers exactly the requests it covers, run after run: each request's cost bound is held at its
 * admission until metering meters it, and no service falls over meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type FakeUpstream, replayJson, startFakeUpstream, fixture } from '@gateway/testing';
import { fixtureAnswerCost, fixtureUsage } from './fixture-cost.js';
import {
  fakeModelEntry,
  SIM_MINI_ENTRY,
  startCluster,
  startSecondAuth,
  startSecondEdge,
  stopProcess,
  writeCatalog,
  type Cluster,
  type SecondAuth,
} from './cluster.js';

const ADMIN_TOKEN = 'admin-token-for-the-team-tests-0123456789abcdef';
const KEY_VARIABLE = 'TEAMS_UPSTREAM_API_KEY';
let cluster: Cluster;
let upstream: FakeUpstream;
let secondAuth: SecondAuth | undefined;
const edges: Array<Awaited<ReturnType<typeof startSecondEdge>>> = [];
let cost: bigint;
/** What one answer of `held-model` costs: its 10 completion tokens (its prompt is free), the most its max_tokens allows. */
let heldCost: bigint;

beforeAll(async () => {
  upstream = await startFakeUpstream(replayJson(200, fixture('chat-completion.json')));
  // 1 USD per million tokens of every kind: an answer costs whole micro-dollars, the unit budgets are set in.
  const entry = fakeModelEntry(upstream.baseUrl, KEY_VARIABLE, 'team-model', [], 'input: "1", cached_input: "1", output: "1"');
  // Prompt tokens free, 1 USD per million completion tokens: with max_tokens equal to the fixture's
  // completion, a request's cost bound (what its admission holds) is exactly what it costs.
  const held = fakeModelEntry(upstream.baseUrl, KEY_VARIABLE, 'held-model', [], 'input: "0", cached_input: "0", output: "1"');
  const catalogPath = writeCatalog('teams', [SIM_MINI_ENTRY, entry, held]);
  cost = fixtureAnswerCost(catalogPath, 'team-model');
  expect(cost % 1_000_000n).toBe(0n);
  heldCost = fixtureAnswerCost(catalogPath, 'held-model');
  expect(heldCost).toBe(BigInt(fixtureUsage().completion_tokens) * 1_000_000n);
  cluster = await startCluster({ env: { CATALOG_PATH: catalogPath, [KEY_VARIABLE]: 'sk-test-teams', EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
  secondAuth = await startSecondAuth(cluster);
  const authPort = secondAuth.port;
  // Edges 2 and 3: one on each auth replica (the cluster's edge is on the first).
  edges.push(await startSecondEdge(cluster, { CATALOG_PATH: catalogPath, EDGE_ADMIN_TOKEN: ADMIN_TOKEN, AUTH_SERVICE_ADDR: `127.0.0.1:${authPort}` }));
  edges.push(await startSecondEdge(cluster, { CATALOG_PATH: catalogPath, EDGE_ADMIN_TOKEN: ADMIN_TOKEN }));
});

afterAll(async () => {
  for (const edge of edges) await edge.stop();
  await stopProcess(secondAuth?.process);
  await cluster?.stop();
  await upstream?.close();
});

const baseUrls = () => [cluster.baseUrl, ...edges.map((edge) => edge.baseUrl)];

async function admin<T>(method: string, path: string, body?: unknown, origin = cluster.baseUrl.replace(/\/v1$/, '')): Promise<T> {
  const response = await fetch(`${origin}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.status, await response.clone().text()).toBeLessThan(300);
  return (await response.json()) as T;
}

function complete(baseUrl: string, secret: string, model = 'team-model', maxTokens = 16): Promise<Response> {
  return fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hello' }], max_tokens: maxTokens }),
  });
}

type Team = { id: string; key_count: number; budgets: { daily_usd: number | null }; limits: { requests_per_minute: number | null } };
type Key = { id: string; secret: string; team_id: string | null };

/** A team and two pro keys in it (their own limits far above the team's). */
async function teamOfTwo(body: Record<string, unknown>): Promise<{ team: Team; keys: Key[] }> {
  const team = await admin<Team>('POST', '/teams', { name: `team ${Date.now()}`, ...body });
  const keys = [await admin<Key>('POST', '/keys', { plan: 'pro', team_id: team.id }), await admin<Key>('POST', '/keys', { plan: 'pro', team_id: team.id })];
  for (const key of keys) expect(key.team_id).toBe(team.id);
  return { team, keys };
}

/** The team's usage as metering has it, read through the admin API of the third edge. */
async function teamRequests(teamId: string): Promise<number> {
  return (await teamTotals(teamId)).requests;
}

/** The team's usage totals as metering has them, read through the admin API of the third edge. */
async function teamTotals(teamId: string): Promise<{ requests: number; cost_usd: number }> {
  const page = await admin<{ totals: { requests: number; cost_usd: number } }>(
    'GET',
    `/usage?start=${Math.floor(Date.now() / 1000) - 7_200}&team_id=${teamId}`,
    undefined,
    edges[1]!.origin,
  );
  return page.totals;
}

function usdFor(requests: number): number {
  return Number(cost * BigInt(requests)) / 1e12;
}

describe('teams across three edges and two auth replicas', () => {
  it("gives a team exactly the requests its daily budget covers over two keys, then refuses each key with the team's insufficient_quota", async () => {
    const { team, keys } = await teamOfTwo({ budgets: { daily_usd: usdFor(4) } });
    expect(team.budgets.daily_usd).toBe(usdFor(4));
    const urls = baseUrls();
    for (let index = 0; index < 4; index += 1) {
      const response = await complete(urls[index % 3]!, keys[index % 2]!.secret);
      expect(response.status, await response.clone().text()).toBe(200);
      // Each answer is metered before the next request starts: what "exact" is measured against.
      await eventually(async () => (await teamRequests(team.id)) === index + 1, 'the answer to be metered', 30_000, 100);
    }
    for (const url of urls) {
      for (const key of keys) {
        const refused = await complete(url, key.secret);
        expect(refused.status).toBe(429);
        const body = (await refused.json()) as { error: { code: string; type: string; message: string } };
        expect(body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
        expect(body.error.message).toMatch(/team has spent its daily budget/);
        // What the key may still spend is what its team may: nothing.
        expect(refused.headers.get('x-gateway-budget-remaining-usd')).toBe('0');
        const untilMidnight = 86_400 - (Math.floor(Date.now() / 1000) % 86_400);
        expect(Math.abs(Number(refused.headers.get('retry-after')) - untilMidnight)).toBeLessThanOrEqual(2);
      }
    }
    // A burst over every edge and both keys once the budget is spent: none gets through.
    const burst = await Promise.all(Array.from({ length: 12 }, (_, index) => complete(urls[index % 3]!, keys[index % 2]!.secret)));
    expect(burst.map((response) => response.status)).toEqual(Array(12).fill(429));
    expect(upstream.requests.filter((request) => request.headers.authorization === 'Bearer sk-test-teams')).toHaveLength(4);

    // Usage by team: each key's requests, both named by the team.
    const page = await admin<{ data: Array<{ results: Array<{ team_id: string | null; key_id: string; requests: number }> }> }>(
      'GET',
      `/usage?start=${Math.floor(Date.now() / 1000) - 7_200}&team_id=${team.id}&group_by=team,key`,
    );
    const results = page.data.flatMap((bucket) => bucket.results);
    expect(results.every((result) => result.team_id === team.id)).toBe(true);
    expect(results.reduce((sum, result) => sum + result.requests, 0)).toBe(4);
    expect(new Set(results.map((result) => result.key_id))).toEqual(new Set(keys.map((key) => key.id)));

    // Raising the team's budget lets both keys through at their next request.
    await admin('PATCH', `/teams/${team.id}`, { budgets: { daily_usd: usdFor(6) } });
    expect((await complete(urls[2]!, keys[1]!.secret)).status).toBe(200);
  });

  it("answers exactly the requests a team's budget covers under split load over two keys and three edges, 20 runs in a row, every answer metered once", async () => {
    const RUNS = 20;
    const COVERED = 24;
    const CLIENTS = 12;
    const urls = baseUrls();
    const upstreamCalls = () => upstream.requests.filter((request) => request.headers.authorization === 'Bearer sk-test-teams').length;
    const usd = (requests: number) => Number(heldCost * BigInt(requests)) / 1e12;
    const outcomes: Array<{ run: number; answered: number; metered: number }> = [];
    for (let run = 0; run < RUNS; run += 1) {
      const { team, keys } = await teamOfTwo({ budgets: { daily_usd: usd(COVERED) } });
      const callsBefore = upstreamCalls();
      // Each client sends one request after another, over its key and the three edges in turn,
      // until the team's budget refuses it; several are in flight at any time.
      const clients = Array.from({ length: CLIENTS }, async (_, client) => {
        const statuses: number[] = [];
        for (let attempt = 0; attempt < COVERED + CLIENTS; attempt += 1) {
          const response = await complete(urls[(client + attempt) % 3]!, keys[client % 2]!.secret, 'held-model', 10);
          const body = (await response.json()) as { error?: { code: string } };
          statuses.push(response.status);
          if (response.status !== 200) {
            expect(response.status, JSON.stringify(body)).toBe(429);
            expect(body.error?.code).toBe('insufficient_quota');
            break;
          }
        }
        return statuses;
      });
      const statuses = (await Promise.all(clients)).flat();
      const answered = statuses.filter((status) => status === 200).length;
      // Each answer's cost equals the bound its admission held: the budget answers exactly what it covers.
      expect({ run, answered }).toEqual({ run, answered: COVERED });
      expect(upstreamCalls() - callsBefore).toBe(answered);
      // Every answer metered, once: the team's usage reaches the answers and its cost, and no more.
      await eventually(async () => (await teamRequests(team.id)) >= answered || undefined, `run ${run}: every answer to be metered`, 30_000, 100);
      const totals = await teamTotals(team.id);
      expect(totals).toMatchObject({ requests: answered, cost_usd: usd(answered) });
      // The holds went with the metering: one request's more budget lets exactly one more in.
      await admin('PATCH', `/teams/${team.id}`, { budgets: { daily_usd: usd(COVERED + 1) } });
      expect((await complete(urls[run % 3]!, keys[run % 2]!.secret, 'held-model', 10)).status).toBe(200);
      expect((await complete(urls[(run + 1) % 3]!, keys[(run + 1) % 2]!.secret, 'held-model', 10)).status).toBe(429);
      outcomes.push({ run, answered, metered: totals.requests });
      // No service fell over: every process runs, and the usage API answers (above).
      for (const [name, child] of Object.entries(cluster.processes))
        expect({ name, exitCode: child.exitCode, signal: child.signalCode }).toEqual({ name, exitCode: null, signal: null });
      expect(secondAuth?.process.exitCode ?? null).toBeNull();
      expect(edges.map((edge) => edge.running())).toEqual([true, true]);
    }
    expect(outcomes).toHaveLength(RUNS);
  }, 240_000);

  it("holds a team's requests per minute exactly over two keys and three edges: 30 of 90 concurrent requests", async () => {
    const { team, keys } = await teamOfTwo({ limits: { requests_per_minute: 30 } });
    expect(team.limits.requests_per_minute).toBe(30);
    const urls = baseUrls();
    const responses = await Promise.all(Array.from({ length: 90 }, (_, index) => complete(urls[index % 3]!, keys[index % 2]!.secret, 'sim-mini')));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(30);
    expect(statuses.filter((status) => status === 429)).toHaveLength(60);
    const refused = responses.find((response) => response.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('rate_limit_exceeded');
    expect(body.error.message).toMatch(/requests per minute of this key's team: limit 30/);
    for (const response of responses) if (!response.bodyUsed) await response.text();

    // A key outside the team is not held by the team's limit; a team with live keys is not deleted.
    const outsider = await admin<Key>('POST', '/keys', { plan: 'pro' });
    expect((await complete(urls[1]!, outsider.secret, 'sim-mini')).status).toBe(200);
    const listed = await admin<{ data: Key[] }>('GET', `/keys?team_id=${team.id}`);
    expect(listed.data.map((key) => key.id).sort()).toEqual(keys.map((key) => key.id).sort());
    const busy = await fetch(`${cluster.baseUrl.replace(/\/v1$/, '')}/admin/v1/teams/${team.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(busy.status).toBe(409);
    for (const key of keys) await admin('DELETE', `/keys/${key.id}`);
    expect(await admin('DELETE', `/teams/${team.id}`)).toMatchObject({ id: team.id, deleted: true });
  });
});
