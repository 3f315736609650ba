/**
 * The connection-age soak: two auth replicas, two executors, the edge, and steady whole and
 * streamed chat completions from twelve concurrent clients for more than ten connection ages, the
 * servers' age shortened to 4 s by configuration (GRPC_MAX_CONNECTION_AGE_MS; 2 minutes shipped).
 * Each age sends every connection to auth, the router, the executors and metering a GOAWAY while
 * calls are in flight on it, call streams included (they move at their own age, about 30 s, so
 * they outlive their connection by far, and keepalive pings, every 15 s, come while they do).
 * Not one request may fail, every answer is metered exactly once, and no service's memory grows.
 * `pnpm bench soak` runs the same for 30 minutes at the shipped age.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis } from '@gateway/redis';
import { quietMeteredUsage, settledMeteredUsage } from './cluster.js';
import { medianOf, sampleMemory, startLoad, startSoakCluster, type SoakCluster } from './soak.js';

const CONNECTION_AGE_MS = 4_000;
/** Ten ages at their longest (grpc-js adds up to 10%), and one more to be sure of the tenth. */
const SOAK_MS = 11 * CONNECTION_AGE_MS * 1.1;
const CLIENTS = 12;

let soak: SoakCluster;
let redis: ReturnType<typeof connectRedis>;

beforeAll(async () => {
  soak = await startSoakCluster({ connectionAgeMs: CONNECTION_AGE_MS });
  redis = connectRedis(soak.cluster.redisUrl);
});

afterAll(async () => {
  redis?.disconnect();
  await soak?.stop();
});

describe('connections that reach their age under steady load', () => {
  it('fail no request across ten ages, meter every answer once, and leave memory flat', async () => {
    const before = await quietMeteredUsage(redis, soak.cluster.apiKey);
    const memory = sampleMemory(soak.processes, 1_000);
    const load = startLoad(soak.cluster, CLIENTS);
    const startedAt = Date.now();
    let result: Awaited<ReturnType<typeof load.stop>>;
    try {
      // The soak's length is what it checks: every connection aged out more than ten times under load.
      while (Date.now() - startedAt < SOAK_MS) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        if (load.failures() > 0) break;
      }
    } finally {
      result = await load.stop();
    }
    const samples = memory.stop();
    process.stdout.write(
      `connection-age soak: ${result.answered} answered (${result.streamed} streamed) in ${((Date.now() - startedAt) / 1000).toFixed(0)} s, ${result.failures.length} failed\n`,
    );
    expect(
      result.failures,
      soak.processes
        .filter((entry) => entry.name.startsWith('edge'))
        .map((entry) => entry.logs.join(''))
        .join('\n'),
    ).toEqual([]);
    expect(result.answered).toBeGreaterThan(200);

    const metered = await settledMeteredUsage(soak.cluster, redis, 30_000);
    expect(metered.requests - before.requests).toBe(result.answered);

    // Flat: the median of the last fifth no more than half as much again as that of the second
    // fifth (after warm-up), plus 40 MiB; a leak per connection or per age grows without bound.
    for (const [name, rss] of samples) {
      const early = medianOf(rss, 0.2, 0.4);
      const late = medianOf(rss, 0.8, 1);
      process.stdout.write(`connection-age soak: ${name} RSS ${early.toFixed(0)} MiB early, ${late.toFixed(0)} MiB late\n`);
      expect(late, `${name}'s memory`).toBeLessThanOrEqual(early * 1.5 + 40);
    }
  }, 150_000);
});
