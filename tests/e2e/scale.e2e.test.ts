/**
 * The scale drill: replicas added to and removed from a DNS name under steady load, as an
 * autoscaler and a headless Service do. The edge reaches the executors and auth by names served
 * by a DNS server this test runs on loopback (`dns://127.0.0.1:<port>/<name>:<port>`, the real
 * resolver path of every gRPC channel), each replica listening on its own loopback address
 * (127.0.0.2, .3, .4) at one port. Replicas added to the name must get their share of the
 * requests within 30 s, though every connection stays up; a replica removed and sent SIGTERM must
 * fail no request.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startDnsServer, type DnsServer } from '@gateway/testing';
import { freePort, metric, startCluster, stopProcess, type Cluster } from './cluster.js';
import { startLoad, type LoadResult } from './soak.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EXECUTORS = 'executors.gateway.test';
const AUTHS = 'auth.gateway.test';
/** Concurrent clients of the steady load. */
const CLIENTS = 8;
/** How long after its addition a replica must carry its share. */
const JOIN_WITHIN_MS = 30_000;

type Service = 'executor' | 'auth';

/** A replica of a service: the cluster's own, or one the drill started. */
interface Replica {
  host: string;
  metricsPort: number;
  process: ChildProcess;
  logs: string[];
}

/** What a replica counts per request it serves: the executor its completions, auth its decisions. */
const SERVED_METRIC: Record<Service, string> = { executor: 'gateway_executor_requests_total', auth: 'gateway_auth_decisions_total' };

let dns: DnsServer;
let cluster: Cluster;
const ports = { executor: 0, auth: 0 };
const replicas: Record<Service, Replica[]> = { executor: [], auth: [] };

/** Starts one more replica of `service` on `host` (at the service's port), ready to serve. */
async function startReplica(service: Service, host: string): Promise<Replica> {
  const metricsPort = await freePort();
  const prefix = service.toUpperCase();
  const logs: string[] = [];
  const child = spawn(process.execPath, [`services/${service}/dist/main.js`], {
    cwd: ROOT,
    env: { ...cluster.env, [`${prefix}_LISTEN_ADDR`]: `${host}:${ports[service]}`, [`${prefix}_METRICS_PORT`]: String(metricsPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (data: Buffer) => logs.push(data.toString()));
  child.stderr!.on('data', (data: Buffer) => logs.push(data.toString()));
  const replica = { host, metricsPort, process: child, logs };
  replicas[service].push(replica);
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`the ${service} on ${host} exited:\n${logs.join('')}`);
      const response = await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined);
      return response?.status === 200 || undefined;
    },
    `the ${service} on ${host} to be ready`,
    30_000,
    100,
  );
  return replica;
}

/** What each replica has served so far, by host. */
async function served(service: Service): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const replica of replicas[service]) {
    if (replica.process.exitCode !== null || replica.process.signalCode !== null) continue;
    counts.set(replica.host, await metric(`http://127.0.0.1:${replica.metricsPort}/metrics`, SERVED_METRIC[service]).catch(() => 0));
  }
  return counts;
}

/** Each replica's share of what the replicas served over the next `ms`. */
async function shares(service: Service, ms: number): Promise<Map<string, number>> {
  const before = await served(service);
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = await served(service);
  const deltas = [...after].map(([host, count]) => [host, count - (before.get(host) ?? 0)] as const);
  const total = deltas.reduce((sum, [, delta]) => sum + delta, 0);
  return new Map(deltas.map(([host, delta]) => [host, total === 0 ? 0 : delta / total]));
}

/**
 * Adds replicas on `hosts` to the name under load and waits until each added one carries at least
 * a quarter of the requests; resolves how long that took after they were added to the name.
 */
async function addAndWaitForShare(service: Service, name: string, hosts: string[]): Promise<{ afterMs: number; shares: Map<string, number> }> {
  for (const host of hosts) await startReplica(service, host);
  dns.set(
    name,
    replicas[service].map((replica) => replica.host),
  );
  const addedAt = Date.now();
  let last = new Map<string, number>();
  while (Date.now() - addedAt < JOIN_WITHIN_MS) {
    last = await shares(service, 2_000);
    if (hosts.every((host) => (last.get(host) ?? 0) >= 0.25)) return { afterMs: Date.now() - addedAt, shares: last };
  }
  throw new Error(`the ${service} replicas added did not get a quarter of the requests each within ${JOIN_WITHIN_MS} ms: ${JSON.stringify([...last])}`);
}

/** Removes a replica from the name and sends it SIGTERM at the same moment (as Kubernetes does); resolves its exit code. */
async function removeAndStop(service: Service, name: string, replica: Replica): Promise<number | null> {
  dns.set(
    name,
    replicas[service].filter((other) => other !== replica && other.process.exitCode === null).map((other) => other.host),
  );
  await stopProcess(replica.process, 'SIGTERM');
  return replica.process.exitCode;
}

beforeAll(async () => {
  dns = await startDnsServer({ [EXECUTORS]: ['127.0.0.2'], [AUTHS]: ['127.0.0.2'] });
  ports.executor = await freePort();
  ports.auth = await freePort();
  cluster = await startCluster({
    plan: 'enterprise',
    env: {
      EXECUTOR_LISTEN_ADDR: `127.0.0.2:${ports.executor}`,
      EXECUTOR_SERVICE_ADDR: dns.target(EXECUTORS, ports.executor),
      AUTH_LISTEN_ADDR: `127.0.0.2:${ports.auth}`,
      AUTH_SERVICE_ADDR: dns.target(AUTHS, ports.auth),
    },
  });
  for (const service of ['executor', 'auth'] as const) {
    replicas[service].push({
      host: '127.0.0.2',
      metricsPort: cluster.ports[`${service}Metrics`]!,
      process: cluster.processes[service],
      logs: cluster.logs[service],
    });
  }
});

afterAll(async () => {
  await Promise.all([...replicas.executor, ...replicas.auth].map((replica) => stopProcess(replica.process)));
  await cluster?.stop();
  await dns?.stop();
});

describe('replicas added and removed under load', () => {
  const drills = [
    {
      service: 'executor' as const,
      name: EXECUTORS,
      added: ['127.0.0.3', '127.0.0.4'],
      what: 'executors added to the name get a quarter of the requests each',
    },
    { service: 'auth' as const, name: AUTHS, added: ['127.0.0.3'], what: 'an auth replica added to the name gets a quarter of the decisions' },
  ];
  for (const { service, name, added, what } of drills)
    it(`${what} within 30 s; one removed with SIGTERM fails no request`, async () => {
      const load = startLoad(cluster, CLIENTS, { timeoutMs: 15_000 });
      let result: LoadResult | undefined;
      try {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        // The first replica serves everything until the others join.
        expect([...(await shares(service, 1_000))]).toEqual([[replicas[service][0]!.host, 1]]);
        const joined = await addAndWaitForShare(service, name, added);
        process.stdout.write(
          `scale drill: ${service} ${added.join(', ')} carried ${formatShares(joined.shares)} ${(joined.afterMs / 1000).toFixed(1)} s after joining\n`,
        );
        // And go on carrying it: every replica has its even share.
        const steady = await shares(service, 2_000);
        process.stdout.write(`scale drill: ${service} then: ${formatShares(steady)}\n`);
        for (const share of steady.values()) expect(share).toBeGreaterThanOrEqual(0.25);

        // The first one leaves (its drain ended, exit 0); the others go on serving the load.
        const first = replicas[service][0]!;
        expect(await removeAndStop(service, name, first)).toBe(0);
        const answeredBefore = load.answered();
        const after = await shares(service, 2_000);
        expect(load.answered() - answeredBefore).toBeGreaterThan(20);
        for (const host of added) expect(after.get(host)).toBeGreaterThan(0.25);
      } finally {
        result = await load.stop();
      }
      process.stdout.write(`scale drill: ${service}: ${result.answered} answered, ${result.failures.length} failed\n`);
      expect(result.failures).toEqual([]);
      expect(result.answered).toBeGreaterThan(100);
    }, 120_000);
});

function formatShares(shares: Map<string, number>): string {
  return [...shares].map(([host, share]) => `${host} ${(share * 100).toFixed(0)}%`).join(', ');
}
