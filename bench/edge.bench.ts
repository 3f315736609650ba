/**
 * The gateway's own cost on the hot path: a whole completion through edge -> auth + executor,
 * against the same request sent straight to the executor over gRPC, on a simulated model with no
 * artificial delay. Reports the edge's added latency, throughput, and CPU per request per service.
 */
import autocannon from 'autocannon';
import { callUnary, createClient } from '@gateway/grpc';
import { loadGatewayGrpc, type ExecuteRequest, type ExecuteResponseOutput } from '@gateway/proto';
import { startCluster, type Cluster } from '../tests/e2e/cluster.js';
import type { BenchSuite } from './run.js';
import { onStarted } from './started.js';
import { fixed, processCpuMs, processRssMiB, summarize, table, timeSequential } from './measure.js';

const CATALOG = new URL('./catalog.yaml', import.meta.url).pathname;
const MESSAGES = [{ role: 'user', content: 'Say hello in five words.' }];
const SERVICES = ['edge', 'auth', 'router', 'executor', 'metering'] as const;

async function load(cluster: Cluster, body: string, connections: number, seconds: number) {
  const before = Object.fromEntries(SERVICES.map((name) => [name, processCpuMs(cluster.processes[name].pid!)]));
  const result = await autocannon({
    url: `${cluster.baseUrl}/chat/completions`,
    method: 'POST',
    connections,
    duration: seconds,
    headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
    body,
  });
  const cpu = Object.fromEntries(SERVICES.map((name) => [name, processCpuMs(cluster.processes[name].pid!) - before[name]!]));
  return { result, cpu };
}

export const suite: BenchSuite = {
  name: 'edge',
  description: 'gateway overhead on a whole completion and a stream (simulated model, no delay)',
  run: () =>
    onStarted(startCluster({ env: { CATALOG_PATH: CATALOG } }), async (cluster) => {
      const grpc = loadGatewayGrpc().gateway;
      const executor = createClient(grpc.executor.v1.ExecutorService, `127.0.0.1:${cluster.ports.executor}`);
      const execute: ExecuteRequest = {
        request_id: 'bench',
        model_id: 'sim-bench',
        request: { model: 'sim-bench', messages: [{ role: 'ROLE_USER', text: MESSAGES[0]!.content }], seed: 1 },
      };
      const body = JSON.stringify({ model: 'sim-bench', messages: MESSAGES, seed: 1 });
      const headers = { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' };

      const direct = summarize(
        await timeSequential(500, 100, () => callUnary<ExecuteRequest, ExecuteResponseOutput>(executor, executor.Complete, execute, { deadlineMs: 5000 })),
      );
      const gateway = summarize(
        await timeSequential(500, 100, async () => {
          const response = await fetch(`${cluster.baseUrl}/chat/completions`, { method: 'POST', headers, body });
          if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`);
          await response.arrayBuffer();
        }),
      );
      console.log('Sequential latency, one request at a time (ms):\n');
      table(
        ['path', 'p50', 'p99', 'mean'],
        [
          ['executor over gRPC (the model alone)', fixed(direct.p50), fixed(direct.p99), fixed(direct.mean)],
          ['through the gateway (HTTP, auth, executor)', fixed(gateway.p50), fixed(gateway.p99), fixed(gateway.mean)],
        ],
      );
      console.log(`\nAdded by the gateway at p50: ${fixed(gateway.p50 - direct.p50)} ms (gateway/executor ratio ${fixed(gateway.p50 / direct.p50)}x).\n`);

      const rows: Array<Array<string | number>> = [];
      for (const [label, requestBody] of [
        ['whole', body],
        ['stream', JSON.stringify({ model: 'sim-bench', messages: MESSAGES, seed: 1, stream: true })],
      ] as const) {
        const { result, cpu } = await load(cluster, requestBody, 32, 8);
        const total = result.requests.total || 1;
        rows.push([
          label,
          Math.round(result.requests.average),
          fixed(result.latency.p50),
          fixed(result.latency.p99),
          result.non2xx,
          ...SERVICES.map((name) => fixed(cpu[name]! / total, 3)),
        ]);
      }
      console.log('Under load, 32 connections for 8 s each:\n');
      table(['mode', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', ...SERVICES.map((name) => `${name} CPU ms/req`)], rows);
      console.log(
        `\nResident memory after the run (MiB): ${SERVICES.map((name) => `${name} ${fixed(processRssMiB(cluster.processes[name].pid!), 0)}`).join(', ')}`,
      );
      executor.close();
    }),
};
