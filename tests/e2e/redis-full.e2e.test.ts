/**
 * The gateway on a Redis of the test's own that fills up: `maxmemory` reached with `noeviction`
 * (the policy the gateway requires) under steady load. While Redis refuses writes, every request
 * gets an answer a client can act on (503 with Retry-After in OpenAI's envelope; no 500, no hang);
 * once `maxmemory` is raised (CONFIG SET, no restart of anything) requests are served again; and at
 * the end every request answered 200, before, during and after, is in the usage API exactly once.
 * Then: a service started on a Redis that may evict refuses to start, saying why and how to
 * override, and starts with the override.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient } from '@gateway/redis';
import { eventually, freePort, hasRedisServer, type RedisServer, startRedisServer } from '@gateway/testing';
import { startCluster, stopProcess, type Cluster } from './cluster.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Loops sending one request after another, each pausing between: well under pro's 1,000 a minute. */
const CONCURRENCY = 3;
const PAUSE_MS = 150;

/** used_memory of a Redis server, from INFO memory (what Redis compares with maxmemory, there being no replica or AOF). */
function usedMemory(server: RedisServer): number {
  return Number(/^used_memory:(\d+)/m.exec(server.cli('INFO', 'memory'))?.[1]);
}

describe.skipIf(!hasRedisServer())('Redis at maxmemory with noeviction, under load', () => {
  let server: RedisServer;
  let gateway: Cluster;
  let filler: RedisClient;

  beforeAll(async () => {
    server = await startRedisServer(['--maxmemory-policy', 'noeviction']);
    gateway = await startCluster({ plan: 'pro', env: { REDIS_URL: server.url } });
    filler = connectRedis(server.url, { maxRetriesPerRequest: 1 });
  });

  afterAll(async () => {
    filler?.disconnect();
    await gateway?.stop();
    await server?.stop();
  });

  it('answers 503 with Retry-After while full, recovers without a restart once it has room, and meters every 200 once', async () => {
    const start = Math.floor(Date.now() / 1000) - 60;
    // before; filling: Redis made full, until the first refusal; full: from then until maxmemory is raised; after.
    let phase: 'before' | 'filling' | 'full' | 'after' = 'before';
    let stop = false;
    const answered = { before: 0, filling: 0, full: 0, after: 0 };
    const statuses = new Map<string, number>();
    const unclear: string[] = [];
    const load = async () => {
      while (!stop) {
        const during = phase;
        const response = await fetch(`${gateway.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${gateway.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 5 }),
          signal: AbortSignal.timeout(10_000),
        });
        const body = (await response.json()) as { error?: { message?: string; type?: string; code?: string } };
        statuses.set(`${during} ${response.status}`, (statuses.get(`${during} ${response.status}`) ?? 0) + 1);
        if (response.status === 200) answered[during] += 1;
        else if (
          response.status !== 503 ||
          !response.headers.get('retry-after') ||
          body.error?.code !== 'auth_unavailable' ||
          typeof body.error.message !== 'string' ||
          body.error.type === undefined
        )
          unclear.push(`${response.status} retry-after=${response.headers.get('retry-after')} ${JSON.stringify(body)}`);
        await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
      }
    };
    const loops = Array.from({ length: CONCURRENCY }, load);
    try {
      await eventually(() => answered.before >= 20, '20 requests answered before Redis fills', 20_000, 20);

      // Full: 4 MiB more data than Redis may hold, then maxmemory below what it holds. Auth reads
      // Redis's memory every second; from its next read on, requests are refused.
      const chunk = 'x'.repeat(64 * 1024);
      for (let index = 0; index < 64; index += 1) await filler.set(`filler:${index}`, chunk);
      phase = 'filling';
      server.cli('CONFIG', 'SET', 'maxmemory', String(usedMemory(server) - 4 * 1024 * 1024));
      expect(await filler.set('filler:more', chunk).catch((error: Error) => error.message)).toMatch(/^OOM command not allowed/);
      await eventually(() => (statuses.get('filling 503') ?? 0) > 0, 'the first request refused while Redis is full', 10_000, 10);
      phase = 'full';
      // Refused for several seconds of load (several of auth's reads), Redis full all along.
      await eventually(() => (statuses.get('full 503') ?? 0) >= 90, '90 requests answered 503 while Redis is full', 30_000, 20).catch((error: Error) => {
        throw new Error(`${error.message}: ${JSON.stringify(Object.fromEntries(statuses))} ${unclear.slice(0, 3).join(' | ')}`);
      });
      expect(await filler.set('filler:more', chunk).catch((error: Error) => error.message)).toMatch(/^OOM command not allowed/);

      // Room again, by configuration alone: no service restarts.
      server.cli('CONFIG', 'SET', 'maxmemory', '0');
      phase = 'after';
      await eventually(() => answered.after >= 20, '20 requests answered once Redis has room', 60_000, 20);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    const summary = JSON.stringify(Object.fromEntries(statuses));
    process.stdout.write(`redis full: statuses ${summary}\n`);

    // Every request got an answer a client can act on; once refusing, a 200 only for a request
    // decided before (one per loop at most).
    expect(unclear).toEqual([]);
    expect(statuses.get('full 200') ?? 0, summary).toBeLessThanOrEqual(CONCURRENCY);
    for (const service of ['auth', 'metering', 'edge'] as const) expect(gateway.processes[service].exitCode, service).toBeNull();

    // Every 200, before, during and after, metered once: the usage API counts exactly them (metering
    // retried the events Redis refused, and counted none twice).
    const total = answered.before + answered.filling + answered.full + answered.after;
    const usage = async () => {
      const response = await fetch(`${gateway.baseUrl}/usage?start=${start}&bucket=day`, { headers: { authorization: `Bearer ${gateway.apiKey}` } });
      return response.status === 200 ? ((await response.json()) as { totals: { requests: number } }).totals.requests : -1;
    };
    await eventually(async () => (await usage()) === total || undefined, `the usage API to count the ${total} answered requests`, 90_000, 250).catch(
      async (error: Error) => {
        throw new Error(`${error.message}: it counts ${await usage()}`);
      },
    );
    // And it stays there: nothing metered twice later (a redelivery after the outage).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await usage()).toBe(total);
  }, 240_000);
});

/** Starts one service's built main against `env`; resolves with its exit code, or 'running' once its /readyz answers 200. */
async function startService(name: 'auth' | 'metering', env: Record<string, string>): Promise<{ outcome: number | 'running'; output: string }> {
  const metricsPort = await freePort();
  const listenPort = await freePort();
  const upper = name.toUpperCase();
  const child = spawn(process.execPath, [`services/${name}/dist/main.js`], {
    cwd: ROOT,
    env: {
      ...(process.env as Record<string, string>),
      LOG_LEVEL: 'info',
      [`${upper}_LISTEN_ADDR`]: `127.0.0.1:${listenPort}`,
      [`${upper}_METRICS_PORT`]: String(metricsPort),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()));
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()));
  const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? -1)));
  try {
    const outcome = await Promise.race([
      exited,
      eventually(
        async () =>
          (await fetch(`http://127.0.0.1:${metricsPort}/readyz`).then(
            (response) => response.status === 200,
            () => false,
          )) && ('running' as const),
        `${name} to start or exit`,
        30_000,
        100,
      ),
    ]);
    return { outcome, output };
  } finally {
    await stopProcess(child);
  }
}

describe.skipIf(!hasRedisServer())('a Redis that may evict, at start', () => {
  let server: RedisServer;

  beforeAll(async () => {
    server = await startRedisServer(['--maxmemory-policy', 'allkeys-lru']);
  });

  afterAll(async () => {
    await server?.stop();
  });

  it.each(['auth', 'metering'] as const)(
    '%s refuses to start on allkeys-lru, naming the setting and the override; starts with REDIS_ALLOW_EVICTION=true',
    async (name) => {
      const refused = await startService(name, { REDIS_URL: server.url });
      expect(refused.outcome, refused.output).toBe(1);
      expect(refused.output).toContain(`Redis at 127.0.0.1:${server.port} has maxmemory-policy allkeys-lru: it may evict keys`);
      expect(refused.output).toContain('Set maxmemory-policy noeviction on it');
      expect(refused.output).toContain('or set REDIS_ALLOW_EVICTION=true to start anyway.');

      const allowed = await startService(name, { REDIS_URL: server.url, REDIS_ALLOW_EVICTION: 'true' });
      expect(allowed.outcome, allowed.output).toBe('running');
      expect(allowed.output).toContain('Redis may evict keys; starting anyway as REDIS_ALLOW_EVICTION is true');
    },
    90_000,
  );
});
