/**
 * The gateway on a Redis Cluster (three masters with a replica each, started by the test), with
 * the master that holds the API key's data killed under load: its replica takes over, the gateway
 * follows it by itself, the key's limit holds within the requests in flight at the moment of the
 * failover, and every answered request is metered exactly once. Then, on a cluster of its own,
 * masters killed and left dead under a few hundred requests per second (below).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient } from '@gateway/redis';
import { costPicoUsd, loadCatalog } from '@gateway/catalog';
import { eventually, hasRedisServer, startRedisCluster, type RedisCluster } from '@gateway/testing';
import { meteredUsage, metric, startCluster, type Cluster } from './cluster.js';

/** Starter's requests per minute: the limit the drill runs into. */
const LIMIT = 60;
const CONCURRENCY = 8;

describe.skipIf(!hasRedisServer())('a Redis master failed over to its replica under load', () => {
  let redisCluster: RedisCluster;
  let gateway: Cluster;
  let redis: RedisClient;

  beforeAll(async () => {
    redisCluster = await startRedisCluster({ masters: 3, replicas: 1 });
    gateway = await startCluster({ plan: 'starter', env: { REDIS_URL: redisCluster.url, REDIS_WAIT_REPLICAS: '1' } });
    redis = connectRedis(redisCluster.url);
  });

  afterAll(async () => {
    redis?.disconnect();
    await gateway?.stop();
    await redisCluster?.stop();
  });

  it('keeps the limit within the requests in flight, answers every request, and meters each answered one once', async () => {
    const keyId = (await redis.hget(`auth:key:${createHash('sha256').update(gateway.apiKey).digest('hex')}`, 'key_id'))!;
    expect(keyId).toMatch(/^key_/);
    const master = redisCluster.masterOf(`auth:record:{${keyId}}`);

    let failedOver = false;
    let limitedAfterFailover = false;
    let stop = false;
    let answered = 0;
    const statuses = new Map<number, number>();
    const unavailableWithoutRetryAfter: number[] = [];
    const load = async () => {
      while (!stop) {
        const response = await fetch(`${gateway.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${gateway.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 5 }),
          signal: AbortSignal.timeout(10_000),
        });
        await response.arrayBuffer();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        if (response.status === 200) answered += 1;
        if (response.status === 503 && !response.headers.get('retry-after')) unavailableWithoutRetryAfter.push(response.status);
        if (response.status === 429 && failedOver) limitedAfterFailover = true;
        if (response.status === 429 && !failedOver) await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const loops = Array.from({ length: CONCURRENCY }, load);
    try {
      await eventually(() => answered >= LIMIT / 2, 'half the limit to be answered', 20_000, 10);
      await master.kill();
      await redisCluster.healthy(30_000);
      failedOver = true;
      // The key's slot has a new master; the gateway finds it and runs into the limit there.
      await eventually(() => limitedAfterFailover, 'the limit to be reached on the promoted replica', 30_000, 50);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    expect(redisCluster.masterOf(`auth:record:{${keyId}}`).port).not.toBe(master.port);
    process.stdout.write(`redis failover: ${answered} answered of a limit of ${LIMIT}; statuses ${JSON.stringify(Object.fromEntries(statuses))}\n`);

    // Every request got an answer a client can act on: served, limited, or 503 with Retry-After.
    expect([...statuses.keys()].every((status) => status === 200 || status === 429 || status === 503)).toBe(true);
    expect(unavailableWithoutRetryAfter).toEqual([]);
    // Reservations the master took but had not yet passed to its replica are forgotten: at most the
    // requests in flight when it died are let through beyond the limit. Reservations taken for
    // requests that were answered 503 (the reply lost with the master, or a retry that ran after
    // the caller's deadline) still count: the limit may be reached early, never late.
    expect(answered).toBeLessThanOrEqual(LIMIT + CONCURRENCY);
    expect(answered + (statuses.get(503) ?? 0)).toBeGreaterThanOrEqual(LIMIT);

    // Metering waited for the replica before acknowledging: nothing answered is lost or doubled.
    // An event that failed during the failover comes back after the consumer's backoff (5 s, then
    // 15 s, then 30 s).
    await eventually(async () => (await meteredUsage(redis, gateway.apiKey)).requests >= answered, 'every answered request to be metered', 90_000, 500);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await meteredUsage(redis, gateway.apiKey)).requests).toBe(answered);

    // The old master comes back as a replica of the new one.
    await master.start();
    await redisCluster.healthy(30_000);
    expect(master.cli('ROLE').split('\n')[0]).toBe('slave');
  }, 240_000);
});

/**
 * Metering through failovers that are not repaired: under a steady load of whole and streamed
 * completions on two keys whose data live on different shards, the master of the first key's slot
 * is killed and left dead, then the second's while the first is still down. A promoted master has
 * no replica (the usual state for minutes to hours after a failover), and metering waits for
 * replicas (REDIS_WAIT_REPLICAS=1): it must meter again within 15 s of each kill, count what it
 * could not replicate, and once the load stops have metered every answered request exactly once.
 */
describe.skipIf(!hasRedisServer())('metering through Redis masters failed over and left dead', () => {
  const catalog = loadCatalog();
  const ADMIN_TOKEN = 'admin-token-for-the-failover-drill-0123456789';
  let redisCluster: RedisCluster;
  let gateway: Cluster;
  let redis: RedisClient;

  beforeAll(async () => {
    redisCluster = await startRedisCluster({ masters: 3, replicas: 1 });
    gateway = await startCluster({ plan: 'enterprise', env: { REDIS_URL: redisCluster.url, REDIS_WAIT_REPLICAS: '1', EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
    redis = connectRedis(redisCluster.url);
  });

  afterAll(async () => {
    redis?.disconnect();
    await gateway?.stop();
    await redisCluster?.stop();
  });

  /** A key's id, from its secret, as auth stores it. */
  async function keyIdOf(apiKey: string): Promise<string> {
    return (await redis.hget(`auth:key:${createHash('sha256').update(apiKey).digest('hex')}`, 'key_id'))!;
  }

  /** An enterprise key whose data live on another master than `otherMaster`'s. */
  async function keyOnAnotherShard(otherMasterPort: number): Promise<{ secret: string; id: string }> {
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const response = await fetch(`${gateway.baseUrl.replace('/v1', '')}/admin/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ plan: 'enterprise', name: `failover ${attempt}` }),
      });
      expect(response.status).toBe(201);
      const key = (await response.json()) as { id: string; secret: string };
      if (redisCluster.masterOf(`auth:record:{${key.id}}`).port !== otherMasterPort) return key;
    }
    throw new Error('no key landed on another shard');
  }

  /** What the clients of one key were answered: requests and their cost, priced as metering prices them. */
  interface Answered {
    requests: number;
    costPicoUsd: bigint;
  }

  /** A steady load on each key: whole and streamed completions in turn, until stopped. */
  function startLoad(apiKeys: string[], clientsPerKey: number) {
    let stopping = false;
    const answered = new Map<string, Answered>(apiKeys.map((apiKey) => [apiKey, { requests: 0, costPicoUsd: 0n }]));
    const statuses = new Map<number, number>();
    const unexpected: string[] = [];
    const price = (usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } }) =>
      costPicoUsd(catalog.byId.get('sim-mini')!.pricing, {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
      });
    const client = async (apiKey: string, index: number) => {
      for (let sent = 0; !stopping; sent += 1) {
        const stream = (index + sent) % 2 === 1;
        const response = await fetch(`${gateway.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'sim-mini',
            messages: [{ role: 'user', content: `Request ${index}.${sent}` }],
            max_tokens: 8,
            ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
          }),
          signal: AbortSignal.timeout(15_000),
        }).catch((error: Error) => error);
        if (response instanceof Error) {
          unexpected.push(`no answer: ${response.message}`);
          continue;
        }
        const text = await response.text();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        if (response.status === 503 && response.headers.get('retry-after')) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          continue;
        }
        if (response.status !== 200) {
          unexpected.push(`${response.status} ${text.slice(0, 200)}`);
          continue;
        }
        const usage = stream
          ? (text
              .split('\n')
              .filter((line) => line.startsWith('data: {'))
              .map((line) => JSON.parse(line.slice(6)) as { usage?: Parameters<typeof price>[0] })
              .find((chunk) => chunk.usage)?.usage ?? undefined)
          : (JSON.parse(text) as { usage: Parameters<typeof price>[0] }).usage;
        if (!usage || (stream && !text.includes('data: [DONE]'))) {
          unexpected.push(`200 without usage or end: ${text.slice(-200)}`);
          continue;
        }
        const tally = answered.get(apiKey)!;
        tally.requests += 1;
        tally.costPicoUsd += price(usage);
      }
    };
    const clients = apiKeys.flatMap((apiKey) => Array.from({ length: clientsPerKey }, (_, index) => client(apiKey, index)));
    return {
      answered,
      stop: async () => {
        stopping = true;
        await Promise.all(clients);
        return { statuses, unexpected };
      },
    };
  }

  /**
   * Metering's totals of a key; undefined while its shard does not answer. A read that fails or
   * hangs replaces the test's own client, so that what is timed is metering, never a reader of ours
   * still aimed at the dead master.
   */
  async function metered(apiKey: string): Promise<{ requests: number; cost_pico_usd: bigint } | undefined> {
    const totals = await Promise.race([meteredUsage(redis, apiKey), new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 1_000))]).catch(
      () => undefined,
    );
    if (totals) return totals;
    redis.disconnect();
    redis = connectRedis(redisCluster.url, { maxRetriesPerRequest: 1 });
    return undefined;
  }

  /**
   * Kills the master of a key's slot (SIGKILL, never restarted) under the load and resolves how
   * long metering took to meter that key's requests answered after the kill.
   */
  async function killAndTimeRecovery(apiKey: string, keyId: string, load: ReturnType<typeof startLoad>): Promise<number> {
    const master = redisCluster.masterOf(`auth:record:{${keyId}}`);
    const answeredAtKill = load.answered.get(apiKey)!.requests;
    await master.kill();
    const killedAt = Date.now();
    await eventually(
      async () => {
        const totals = await metered(apiKey);
        // Requests answered after the kill are metered: the key's shard has a master again and metering writes to it.
        return totals && totals.requests >= answeredAtKill + 20 ? true : undefined;
      },
      `metering to meter the key's requests after its master was killed`,
      15_000,
      100,
    ).catch(async (error: Error) => {
      const totals = await metered(apiKey);
      throw new Error(
        `${error.message}: ${answeredAtKill} answered at the kill, ${load.answered.get(apiKey)!.requests} now, ${totals?.requests ?? 'unreadable'} metered\n${gateway.logs.metering.join('').slice(-3_000)}`,
      );
    });
    expect(redisCluster.masterOf(`auth:record:{${keyId}}`).port).not.toBe(master.port);
    return Date.now() - killedAt;
  }

  it('meters again within 15 s of each kill, and every answered request exactly once', async () => {
    const first = { secret: gateway.apiKey, id: await keyIdOf(gateway.apiKey) };
    const firstMaster = redisCluster.masterOf(`auth:record:{${first.id}}`);
    const second = await keyOnAnotherShard(firstMaster.port);
    const load = startLoad([first.secret, second.secret], 4);
    let outcome: { statuses: Map<number, number>; unexpected: string[] } | undefined;
    const started = Date.now();
    let firstRecovery = 0;
    let secondRecovery = 0;
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      firstRecovery = await killAndTimeRecovery(first.secret, first.id, load);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      // A second shard's master, while the first is still down.
      secondRecovery = await killAndTimeRecovery(second.secret, second.id, load);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
    } finally {
      outcome = await load.stop();
    }
    const seconds = (Date.now() - started) / 1000;
    const total = [...load.answered.values()].reduce((sum, tally) => sum + tally.requests, 0);
    const unreplicated = await metric(`http://127.0.0.1:${gateway.ports.meteringMetrics}/metrics`, 'gateway_metering_unreplicated_total');
    process.stdout.write(
      `redis failover drill: ${total} answered in ${seconds.toFixed(0)} s (${(total / seconds).toFixed(0)}/s), statuses ${JSON.stringify(Object.fromEntries(outcome.statuses))}; ` +
        `metering again ${(firstRecovery / 1000).toFixed(1)} s and ${(secondRecovery / 1000).toFixed(1)} s after the kills; ${unreplicated} events unreplicated\n`,
    );
    // Every request was served, or refused for a moment with 503 and Retry-After.
    expect(outcome.unexpected).toEqual([]);
    expect(unreplicated).toBeGreaterThan(0);

    // Every answered request metered exactly once: requests and pico-dollars, key by key.
    for (const [apiKey, tally] of load.answered) {
      await eventually(
        async () => ((await metered(apiKey))?.requests ?? 0) >= tally.requests || undefined,
        'every answered request to be metered',
        60_000,
        250,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (const [apiKey, tally] of load.answered) {
      const totals = (await metered(apiKey))!;
      expect({ requests: totals.requests, cost_pico_usd: totals.cost_pico_usd }).toEqual({ requests: tally.requests, cost_pico_usd: tally.costPicoUsd });
    }
  }, 180_000);
});
