/**
 * The drill of one model served by several providers: clients ask for answers without pause while
 * the test takes the providers down one after another (each first resets every new connection,
 * then stops listening once the answers it was sending are done); no request may fail, and every
 * answer must be priced by the provider that served it, to the pico-dollar, in the answer
 * (`gateway.cost_usd`), in the key's latest requests and in /v1/usage (the sum over providers).
 * Used by azure-clouds.e2e.test.ts and claude-clouds.e2e.test.ts.
 */
import { expect } from 'vitest';
import { costPicoUsd, picoUsdToUsd, usdPerMtokToMicro, type BilledUsage, type Pricing } from '@gateway/catalog';
import { eventually, type Responder } from '@gateway/testing';
import type { UsageResult } from '../../services/edge/src/routes/admin/admin-api-schemas.js';
import type { Cluster } from './cluster.js';

/** The admin token a drill's cluster is started with (its EDGE_ADMIN_TOKEN): the drill reads the latest requests with it. */
export const DRILL_ADMIN_TOKEN = 'admin-token-for-the-provider-failover-drills-0123456789';

/** A provider's prices in USD per million tokens, as the catalog writes them. */
export interface UsdPrices {
  readonly input: string;
  readonly cached_input: string;
  readonly cache_write?: string;
  readonly output: string;
}

/** The prices as the pricing function reads them (integer micro-USD per million tokens). */
export function pricingFromUsd(prices: UsdPrices): Pricing {
  return {
    input_micro_usd_per_mtok: usdPerMtokToMicro(prices.input),
    cached_input_micro_usd_per_mtok: usdPerMtokToMicro(prices.cached_input),
    output_micro_usd_per_mtok: usdPerMtokToMicro(prices.output),
    ...(prices.cache_write === undefined ? {} : { cache_write_micro_usd_per_mtok: usdPerMtokToMicro(prices.cache_write) }),
  };
}

/** The prices as a catalog YAML flow mapping. */
export function pricesYaml(prices: UsdPrices): string {
  return `{ ${Object.entries(prices)
    .map(([name, value]) => `${name}: "${value}"`)
    .join(', ')} }`;
}

/** A drill's prices by provider, from a table of each provider's prices in USD. */
export interface ProviderPrices<Provider extends string> {
  /** The providers of the table. */
  readonly providers: Provider[];
  /** A provider's prices as a catalog YAML flow mapping. */
  yaml(provider: Provider): string;
  /** The Pricing of the provider that served an answer. */
  pricing(provider: string): Pricing;
}

/** The prices of each provider in `prices`, as the catalog and the pricing function read them. */
export function providerPrices<Provider extends string>(prices: Record<Provider, UsdPrices>): ProviderPrices<Provider> {
  return {
    providers: Object.keys(prices) as Provider[],
    yaml: (provider) => pricesYaml(prices[provider]),
    pricing: (provider) => pricingFromUsd(prices[provider as Provider]),
  };
}

/** One answer the drill's clients got: who served it, its billed usage and the cost it said. */
export interface ServedAnswer {
  /** The x-request-id the client sent. */
  readonly requestId: string;
  /** performance.now() when it was asked for. */
  readonly startedAt: number;
  /** `gateway.provider` of the answer. */
  readonly provider: string;
  readonly usage: BilledUsage;
  /** `gateway.cost_usd` of the answer. */
  readonly costUsd: number;
}

/** Clients asking for answers one after another until stopped. */
export interface Load<A extends ServedAnswer> {
  readonly answers: A[];
  /** Every request that failed, as thrown. */
  readonly failures: unknown[];
  /** How many answers asked for at or after `since` (performance.now()) `provider` served. */
  servedBy(provider: string, since?: number): number;
  /** How many answers asked for at or after `since` came back. */
  askedSince(since: number): number;
  /** Lets each client finish the request it is on, then resolves. */
  stop(): Promise<void>;
}

/**
 * Starts `clients` concurrent clients; client `n` asks `ask(n)`, then `ask(n + 1)` and so on, so
 * that the turn number can choose the API and whether to stream. A failure is recorded, never thrown.
 */
export function startLoad<A extends ServedAnswer>(clients: number, ask: (turn: number) => Promise<A>): Load<A> {
  const answers: A[] = [];
  const failures: unknown[] = [];
  let stopping = false;
  const client = async (offset: number) => {
    for (let turn = offset; !stopping; turn += 1) {
      try {
        answers.push(await ask(turn));
      } catch (error) {
        failures.push(error);
      }
    }
  };
  const running = Array.from({ length: clients }, (_, offset) => client(offset));
  return {
    answers,
    failures,
    servedBy: (provider, since = 0) => answers.filter((answer) => answer.startedAt >= since && answer.provider === provider).length,
    askedSince: (since) => answers.filter((answer) => answer.startedAt >= since).length,
    stop: async () => {
      stopping = true;
      await Promise.all(running);
    },
  };
}

/** An upstream the drill can take down. */
export interface Downable {
  /** From now on, every new request's connection is reset before any byte. */
  goDown(): void;
  /** Answers it is still sending. */
  inFlight(): number;
  /** Connections it reset since it went down. */
  resets(): number;
  /** Stops listening. */
  close(): Promise<void>;
}

/**
 * A fake upstream's responder the drill can take down: while up, `answer` answers and the answers
 * being sent are counted; once down, every new request's connection is reset before any byte.
 */
export function downable(answer: Responder): { responder: Responder } & Omit<Downable, 'close'> {
  let down = false;
  let inFlight = 0;
  let resets = 0;
  const responder: Responder = async (request, response) => {
    if (down) {
      resets += 1;
      response.socket?.resetAndDestroy();
      return;
    }
    inFlight += 1;
    try {
      await answer(request, response);
    } finally {
      inFlight -= 1;
    }
  };
  return { responder, goDown: () => (down = true), inFlight: () => inFlight, resets: () => resets };
}

/**
 * Takes an upstream down the way a failing one goes: new connections are reset (until some were),
 * the answers already being sent finish, then nothing listens. Resolves with the time
 * (performance.now()) it was down, from which on no answer may come from it.
 */
export async function takeDown(upstream: Downable, name: string): Promise<number> {
  upstream.goDown();
  await eventually(() => upstream.resets() >= 3, `${name} to reset the connections of 3 requests`, 30_000, 10);
  await eventually(() => upstream.inFlight() === 0, `the answers ${name} was sending to finish`, 10_000, 10);
  await upstream.close();
  return performance.now();
}

/**
 * Checks that every request succeeded and that each answer's cost is its usage at the prices of
 * the provider that served it, to the pico-dollar (picoUsdToUsd is exact); returns the total in
 * pico-USD.
 */
function expectPricedByProvider(load: Load<ServedAnswer>, pricing: (provider: string) => Pricing): bigint {
  expect(load.failures).toEqual([]);
  let total = 0n;
  for (const answer of load.answers) {
    const pico = costPicoUsd(pricing(answer.provider), answer.usage);
    total += pico;
    expect({ id: answer.requestId, provider: answer.provider, cost: answer.costUsd }).toEqual({
      id: answer.requestId,
      provider: answer.provider,
      cost: picoUsdToUsd(pico),
    });
  }
  return total;
}

/**
 * Checks that the drill billed each answer by the provider that served it: every request succeeded
 * and each answer's cost is its usage at that provider's prices (expectPricedByProvider); then
 * waits until /v1/usage (grouped by model) counts every answer of `model`, and checks that its cost
 * is the sum of the answers' costs and its token counts the sums of the answers' (plain, cache
 * reads and writes, output); then that the key's latest requests (metering keeps 20) name the
 * provider that served each one and its cost.
 */
export async function expectBilledByProvider(options: {
  cluster: Cluster;
  model: string;
  load: Load<ServedAnswer>;
  pricing: (provider: string) => Pricing;
}): Promise<void> {
  const { cluster, load, pricing } = options;
  const answers = load.answers;
  const origin = cluster.baseUrl.replace(/\/v1$/, '');
  const total = expectPricedByProvider(load, pricing);
  const start = Math.floor(Date.now() / 1000) - 3_600;
  const row = await eventually(
    async () => {
      const response = await fetch(`${origin}/v1/usage?start=${start}&bucket=day&group_by=model`, { headers: { authorization: `Bearer ${cluster.apiKey}` } });
      const page = (await response.json()) as { data: Array<{ results: UsageResult[] }> };
      const found = page.data.flatMap((bucket) => bucket.results).find((entry) => entry.model === options.model);
      return found?.requests === answers.length && found;
    },
    `the ${answers.length} answers of ${options.model} to be metered`,
    30_000,
    200,
  );
  expect(row.cost_pico_usd).toBe(total.toString());
  const sum = (count: (usage: BilledUsage) => number | undefined) => answers.reduce((tokens, answer) => tokens + (count(answer.usage) ?? 0), 0);
  expect({
    prompt_tokens: row.prompt_tokens,
    completion_tokens: row.completion_tokens,
    cached_tokens: row.cached_tokens,
    cache_write_tokens: row.cache_write_tokens,
  }).toEqual({
    prompt_tokens: sum((usage) => usage.prompt_tokens),
    completion_tokens: sum((usage) => usage.completion_tokens),
    cached_tokens: sum((usage) => usage.cached_tokens),
    cache_write_tokens: sum((usage) => usage.cache_write_tokens),
  });
  const recent = (await (await fetch(`${origin}/admin/v1/requests?limit=200`, { headers: { authorization: `Bearer ${DRILL_ADMIN_TOKEN}` } })).json()) as {
    data: Array<{ request_id: string; provider: string; cost_usd: number }>;
  };
  const byRequest = new Map(answers.map((answer) => [answer.requestId, answer]));
  const listed = recent.data.filter((entry) => byRequest.has(entry.request_id));
  expect(listed).toHaveLength(Math.min(20, answers.length));
  for (const entry of listed) {
    const answer = byRequest.get(entry.request_id)!;
    expect(entry).toMatchObject({ provider: answer.provider, cost_usd: picoUsdToUsd(costPicoUsd(pricing(answer.provider), answer.usage)) });
  }
}
