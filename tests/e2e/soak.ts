/**
 * A soak of the whole cluster, shared by the connection-age test (tests/e2e/connection-age.e2e.test.ts,
 * a minute at an age of seconds) and `pnpm bench soak` (30 minutes at the shipped age): two auth
 * replicas and two executors behind DNS names, as the pods behind headless Services, the edge
 * reaching them through those names, and steady whole and streamed chat completions from several
 * concurrent clients. Every answer that is not a full 200 is kept as a failure, and each service's
 * resident memory is sampled as the soak goes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { eventually, startDnsServer, type DnsServer } from '@gateway/testing';
import { processRssMiB } from '../../bench/measure.js';
import { freePort, startCluster, stopProcess, type Cluster } from './cluster.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NAMES = { executor: 'executors.gateway.test', auth: 'auth.gateway.test' } as const;
/** The loopback addresses of the two replicas of auth and of the executor. */
const HOSTS = ['127.0.0.2', '127.0.0.3'] as const;

/** One process of the soak, whose memory is sampled. */
export interface SoakProcess {
  /** `edge`, `auth@127.0.0.2`, … */
  name: string;
  process: ChildProcess;
  logs: string[];
}

/** A running soak cluster. */
export interface SoakCluster {
  cluster: Cluster;
  /** Every process: the cluster's five and the second auth and executor. */
  processes: SoakProcess[];
  stop(): Promise<void>;
}

/** Options of a soak cluster. */
export interface SoakClusterOptions {
  /** The servers' GRPC_MAX_CONNECTION_AGE_MS; the shipped one when absent. */
  connectionAgeMs?: number;
  env?: Record<string, string>;
}

/** Starts the cluster with a second auth and a second executor, every service ready. */
export async function startSoakCluster(options: SoakClusterOptions = {}): Promise<SoakCluster> {
  const dns: DnsServer = await startDnsServer({ [NAMES.executor]: [...HOSTS], [NAMES.auth]: [...HOSTS] });
  const ports = { executor: await freePort(), auth: await freePort() };
  let cluster: Cluster;
  try {
    cluster = await startCluster({
      plan: 'enterprise',
      env: {
        ...(options.connectionAgeMs === undefined ? {} : { GRPC_MAX_CONNECTION_AGE_MS: String(options.connectionAgeMs) }),
        EXECUTOR_LISTEN_ADDR: `${HOSTS[0]}:${ports.executor}`,
        EXECUTOR_SERVICE_ADDR: dns.target(NAMES.executor, ports.executor),
        AUTH_LISTEN_ADDR: `${HOSTS[0]}:${ports.auth}`,
        AUTH_SERVICE_ADDR: dns.target(NAMES.auth, ports.auth),
        ...options.env,
      },
    });
  } catch (error) {
    await dns.stop();
    throw error;
  }
  const processes: SoakProcess[] = (['edge', 'auth', 'router', 'executor', 'metering'] as const).map((name) => ({
    name: name === 'auth' || name === 'executor' ? `${name}@${HOSTS[0]}` : name,
    process: cluster.processes[name],
    logs: cluster.logs[name],
  }));
  const stop = async () => {
    await Promise.all(processes.filter((entry) => !Object.values(cluster.processes).includes(entry.process)).map((entry) => stopProcess(entry.process)));
    await cluster.stop();
    await dns.stop();
  };
  try {
    for (const service of ['auth', 'executor'] as const) {
      const prefix = service.toUpperCase();
      const metricsPort = await freePort();
      const logs: string[] = [];
      const child = spawn(process.execPath, [`services/${service}/dist/main.js`], {
        cwd: ROOT,
        env: { ...cluster.env, [`${prefix}_LISTEN_ADDR`]: `${HOSTS[1]}:${ports[service]}`, [`${prefix}_METRICS_PORT`]: String(metricsPort) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const keep = (data: Buffer) => {
        logs.push(data.toString());
        if (logs.length > 200) logs.shift();
      };
      child.stdout!.on('data', keep);
      child.stderr!.on('data', keep);
      processes.push({ name: `${service}@${HOSTS[1]}`, process: child, logs });
      await eventually(
        async () => {
          if (child.exitCode !== null) throw new Error(`the ${service} on ${HOSTS[1]} exited:\n${logs.join('')}`);
          const response = await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined);
          return response?.status === 200 || undefined;
        },
        `the ${service} on ${HOSTS[1]} to be ready`,
        30_000,
        100,
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { cluster, processes, stop };
}

/** What a steady load got: answers, and every failure with when it happened. */
export interface LoadResult {
  answered: number;
  streamed: number;
  failures: Array<{ atMs: number; what: string }>;
}

/** Where one request of a load goes: an edge's base URL (…/v1) and the model asked for. */
export interface LoadTarget {
  baseUrl: string;
  model: string;
}

/** How a load is sent. */
export interface LoadOptions {
  /** Where request `sent` of client `index` goes; the cluster's edge and sim-mini unless given. */
  target?(index: number, sent: number): LoadTarget;
  /** How long a request may take before it counts as failed; 30 s unless given. */
  timeoutMs?: number;
}

/**
 * Steady whole and streamed chat completions (every other request streamed) from `clients`
 * concurrent clients, all starting at once, each sending its next request when its last is
 * answered, until stop() is called. A failure is anything but a 200 with a full answer (a streamed
 * one ends with `data: [DONE]`).
 */
export function startLoad(
  cluster: Cluster,
  clients: number,
  options: LoadOptions = {},
): { answered(): number; failures(): number; stop(): Promise<LoadResult> } {
  const startedAt = Date.now();
  const target = options.target ?? (() => ({ baseUrl: cluster.baseUrl, model: 'sim-mini' }));
  let stopping = false;
  let answered = 0;
  let streamed = 0;
  const failures: LoadResult['failures'] = [];
  const failed = (what: string) => failures.push({ atMs: Date.now() - startedAt, what });
  const client = async (index: number) => {
    for (let sent = 0; !stopping; sent += 1) {
      const stream = (index + sent) % 2 === 0;
      const { baseUrl, model } = target(index, sent);
      try {
        const response = await fetch(`${baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: `Request ${index}.${sent}` }], max_tokens: 8 }),
          signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
        });
        const text = await response.text();
        if (response.status !== 200 || (stream && !text.includes('data: [DONE]'))) failed(`${baseUrl} ${model} ${response.status} ${text.slice(0, 300)}`);
        else {
          answered += 1;
          if (stream) streamed += 1;
        }
      } catch (error) {
        failed(`${baseUrl} ${model} no answer: ${(error as Error).message}`);
      }
    }
  };
  const running = Array.from({ length: clients }, (_, index) => client(index));
  return {
    answered: () => answered,
    failures: () => failures.length,
    stop: async () => {
      stopping = true;
      await Promise.all(running);
      return { answered, streamed, failures };
    },
  };
}

/** Resident memory samples of each process, MiB, taken every `intervalMs` until stop(). */
export function sampleMemory(processes: readonly SoakProcess[], intervalMs: number): { stop(): Map<string, number[]> } {
  const samples = new Map(processes.map((entry) => [entry.name, [] as number[]]));
  const sample = () => {
    for (const entry of processes) {
      const rss = entry.process.pid !== undefined && entry.process.exitCode === null ? processRssMiB(entry.process.pid) : Number.NaN;
      if (Number.isFinite(rss)) samples.get(entry.name)!.push(rss);
    }
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return samples;
    },
  };
}

/** The median of the samples in [from, to) of a list (fractions of its length). */
export function medianOf(samples: readonly number[], from: number, to: number): number {
  const part = samples.slice(Math.floor(samples.length * from), Math.max(Math.floor(samples.length * from) + 1, Math.floor(samples.length * to)));
  const sorted = [...part].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}
