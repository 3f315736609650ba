/**
 * `pnpm bench soak`: the cluster under steady load for 30 minutes at the shipped connection age
 * (2 minutes, so about fifteen ages), with two auth replicas and two executors behind DNS names
 * (tests/e2e/soak.ts, as the connection-age e2e test runs it for a minute at an age of seconds).
 * Sixteen clients send whole and streamed completions, each its next one as soon as its last is
 * answered. Reported: requests answered and failed (each failure with its minute), and each
 * service's resident memory at the start, after warm-up (a tenth of the run) and at the end.
 * Any failure is **MISSED** and makes `pnpm bench` exit non-zero.
 *
 * `--minutes=<n>` runs that long instead (a quick try: `pnpm bench soak --minutes=2
 * --age-ms=5000`); `--age-ms=<n>` sets the servers' GRPC_MAX_CONNECTION_AGE_MS.
 */
import { connectRedis } from '@gateway/redis';
import { quietMeteredUsage, settledMeteredUsage } from '../tests/e2e/cluster.js';
import { medianOf, sampleMemory, startLoad, startSoakCluster } from '../tests/e2e/soak.js';
import { fixed, numberFlag, table } from './measure.js';
import type { BenchSuite } from './run.js';

const CLIENTS = 16;
const DEFAULT_MINUTES = 30;

/** The soak's usage stream: 30 minutes of events with room to spare. */
const SOAK_USAGE_STREAM_MAX_BYTES = 4 * 1024 ** 3;

export const suite: BenchSuite = {
  name: 'soak',
  description: `whole and streamed completions from ${CLIENTS} clients across many connection ages (30 minutes at the shipped age): failures and memory`,
  async run() {
    const minutes = numberFlag('minutes') ?? DEFAULT_MINUTES;
    const ageMs = numberFlag('age-ms');
    // 30 minutes at the soak's rate take about 0.5 GiB of usage events: more than the 256 MiB stream
    // an e2e cluster gets, so the soak's stream is sized as the proxy benchmark's.
    const soak = await startSoakCluster({ connectionAgeMs: ageMs, env: { USAGE_STREAM_MAX_BYTES: String(SOAK_USAGE_STREAM_MAX_BYTES) } });
    const redis = connectRedis(soak.cluster.redisUrl);
    try {
      console.log(`${minutes} min, connection age ${ageMs === undefined ? 'as shipped (2 min)' : `${ageMs} ms`}, ${CLIENTS} clients\n`);
      const before = await quietMeteredUsage(redis, soak.cluster.apiKey);
      const memory = sampleMemory(soak.processes, 5_000);
      const load = startLoad(soak.cluster, CLIENTS);
      const startedAt = Date.now();
      const durationMs = minutes * 60_000;
      let lastReport = startedAt;
      while (Date.now() - startedAt < durationMs) {
        await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, durationMs - (Date.now() - startedAt))));
        if (Date.now() - lastReport >= 60_000) {
          lastReport = Date.now();
          console.log(`minute ${Math.round((lastReport - startedAt) / 60_000)}: ${load.answered()} answered, ${load.failures()} failed`);
        }
      }
      const result = await load.stop();
      const elapsedS = (Date.now() - startedAt) / 1_000;
      const samples = memory.stop();
      const metered = await settledMeteredUsage(soak.cluster, redis, 60_000);
      const meteredRequests = metered.requests - before.requests;

      table(
        ['answered', 'of which streamed', 'failed', 'requests/s', 'metered', 'verdict'],
        [
          [
            result.answered,
            result.streamed,
            result.failures.length,
            fixed(result.answered / elapsedS, 0),
            meteredRequests,
            result.failures.length === 0 && meteredRequests === result.answered ? 'ok' : '**MISSED**',
          ],
        ],
      );
      console.log('');
      table(
        ['process', 'RSS at start (MiB)', 'after warm-up (MiB)', 'at the end (MiB)', 'highest (MiB)'],
        [...samples].map(([name, rss]) => [
          name,
          fixed(rss[0] ?? Number.NaN, 0),
          fixed(medianOf(rss, 0.1, 0.15), 0),
          fixed(medianOf(rss, 0.95, 1), 0),
          fixed(Math.max(...rss), 0),
        ]),
      );
      if (result.failures.length > 0) {
        console.log('\nfailures (minute: what):');
        for (const failure of result.failures.slice(0, 20)) console.log(`- ${fixed(failure.atMs / 60_000, 1)}: ${failure.what}`);
      }
      if (result.failures.length > 0 || meteredRequests !== result.answered) process.exitCode = 1;
    } finally {
      redis.disconnect();
      await soak.stop();
    }
  },
};
