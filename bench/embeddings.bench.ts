/**
 * POST /v1/embeddings through the whole gateway: requests per second at 50 connections and the CPU
 * each gateway process spends per request, for a body of 16 inputs of about 200 bytes (a retrieval
 * client indexing passages) on the simulated embedding model (1536 values a vector; as base64, what
 * the official clients ask for, and as JSON numbers) and on an OpenAI-compatible embedding model
 * served by a fake upstream in this process (its CPU not counted); beside them, in the
 * same run, a chat completion of about 1 KiB on a simulated model, the path the other suites
 * measure. Absolute figures on a shared machine mean little: the ratio to the chat line says what
 * an embedding costs the gateway compared with a completion.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { fakeOpenAiEmbeddings, startFakeUpstream } from '@gateway/testing';
import { openAiEmbeddingEntry, simulatedEntry, startCluster, writeCatalog, type Cluster } from '../tests/e2e/cluster.js';
import { fixed, processCpuMs, table } from './measure.js';
import { requestBody, writeUnlimitedPlans } from './proxy.bench.js';
import type { BenchSuite } from './run.js';

const CONNECTIONS = 50;
const LOAD_SECONDS = 10;
const KEY_VARIABLE = 'BENCH_EMBEDDINGS_KEY';
const SERVICES = ['edge', 'auth', 'router', 'executor', 'metering'] as const;

/** 16 passages of about 200 bytes each; base64 is what the official clients ask for by default. */
function embeddingsBody(model: string, encoding: 'float' | 'base64'): string {
  const input = Array.from(
    { length: 16 },
    (_, index) => `Passage ${index}: ${'a gateway keeps the cost of each request it serves small and predictable, '.repeat(3)}`,
  );
  return JSON.stringify({ model, input, encoding_format: encoding });
}

function cpuOf(cluster: Cluster): Record<string, number> {
  return Object.fromEntries(SERVICES.map((name) => [name, processCpuMs(cluster.processes[name].pid!)]));
}

/** Waits until the services have gone quiet (metering after the answers left): a 300 ms window under 1% of a core each. */
async function quietCpu(cluster: Cluster): Promise<Record<string, number>> {
  let last = cpuOf(cluster);
  for (let waited = 0; waited < 10_000; waited += 300) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = cpuOf(cluster);
    const moved = SERVICES.reduce((sum, name) => sum + now[name]! - last[name]!, 0);
    last = now;
    if (moved < 3 * SERVICES.length) break;
  }
  return last;
}

async function load(cluster: Cluster, path: string, body: string) {
  const options = {
    url: `${cluster.baseUrl}${path}`,
    method: 'POST' as const,
    connections: CONNECTIONS,
    headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
    body,
  };
  await autocannon({ ...options, duration: 2 });
  const before = await quietCpu(cluster);
  const result = await autocannon({ ...options, duration: LOAD_SECONDS });
  const after = await quietCpu(cluster);
  const count = Math.max(1, result.requests.total);
  const cpu = Object.fromEntries(SERVICES.map((name) => [name, (after[name]! - before[name]!) / count]));
  return { perSecond: result.requests.total / LOAD_SECONDS, errors: result.non2xx + result.errors + result.timeouts, cpu };
}

export const suite: BenchSuite = {
  name: 'embeddings',
  description: 'POST /v1/embeddings (16 inputs) per second and CPU per request, beside a chat completion, in one run',
  async run() {
    const directory = mkdtempSync(join(tmpdir(), 'bench-embeddings-'));
    const upstream = await startFakeUpstream(fakeOpenAiEmbeddings({ key: 'sk-bench', dimensions: 1536 }));
    let cluster: Cluster | undefined;
    try {
      const plans = writeUnlimitedPlans(directory);
      const catalog = writeCatalog('bench-embeddings', [
        simulatedEntry('sim-chat', { timeToFirstTokenMs: 0 }),
        `  - id: sim-embedding
    provider: simulated
    kind: embedding
    owned_by: bench
    created: 1735689600
    upstream: { model: sim-embedding }
    pricing: { input: "0.02" }
    context_window: 8192
    embedding: { dimensions: 1536, shortenable: true }
    simulation: { time_to_first_token_ms: 0, tokens_per_second: 0 }`,
        openAiEmbeddingEntry('upstream-embedding', upstream.baseUrl, KEY_VARIABLE, { inputPrice: '0.02', dimensions: 1536 }),
      ]);
      cluster = await startCluster({ plan: 'pro', env: { CATALOG_PATH: catalog, AUTH_PLANS_PATH: plans, [KEY_VARIABLE]: 'sk-bench' } });
      const lines = [
        { what: 'chat completion, sim-chat (reference)', path: '/chat/completions', body: requestBody('sim-chat', false) },
        { what: 'embeddings x16 base64, sim-embedding', path: '/embeddings', body: embeddingsBody('sim-embedding', 'base64') },
        { what: 'embeddings x16 float, sim-embedding', path: '/embeddings', body: embeddingsBody('sim-embedding', 'float') },
        { what: 'embeddings x16 base64, OpenAI-compatible upstream', path: '/embeddings', body: embeddingsBody('upstream-embedding', 'base64') },
      ];
      const rows: Array<Array<string | number>> = [];
      let reference = 0;
      for (const line of lines) {
        const result = await load(cluster, line.path, line.body);
        const total = SERVICES.reduce((sum, name) => sum + result.cpu[name]!, 0);
        if (reference === 0) reference = total;
        upstream.requests.length = 0;
        rows.push([
          line.what,
          fixed(result.perSecond, 0),
          result.errors,
          fixed(total, 2),
          SERVICES.map((name) => `${name} ${fixed(result.cpu[name]!, 2)}`).join(', '),
          fixed(total / reference),
        ]);
      }
      table(['request', 'requests/s', 'errors', 'CPU ms per request (gateway)', 'per process', 'CPU vs chat'], rows);
    } finally {
      await cluster?.stop();
      await upstream.close();
      rmSync(directory, { recursive: true, force: true });
    }
  },
};
