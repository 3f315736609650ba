/**
 * The gateway's own cost on the path users run: a catalog model pointing at an OpenAI-compatible
 * upstream (a node:http mock answering at once with 20-token answers), measured in one run beside
 * two baselines: the mock called directly, and a bare node:http + fetch proxy in front of it.
 *
 * The benchmark starts its own Redis and NATS (so that their CPU is measured with the gateway's),
 * the mock, the bare proxy and the five services. It reports, each figure beside its ratio to the
 * bare proxy: one-at-a-time latency (whole p50/p99, stream time to first token), completions and
 * streams per second at 50 connections with the CPU per request of every process, and the memory
 * of 10,000 concurrent streams held open by a slow upstream; last, the edge-to-executor leg of a
 * stream alone, carried as a streamed call on the long-lived CompleteCalls streams and as a
 * StreamComplete call of its own, side by side.
 *
 * `pnpm bench proxy --pin` puts the gateway's processes (Redis and NATS included) and the bare
 * proxy on core 0, the load generator and the mock on core 1.
 *
 * `pnpm bench proxy --against=<ref>` also measures an earlier commit beside this checkout: built
 * once under .run/bench-previous (bench/previous.ts) and started with a Redis and NATS of its own,
 * the same catalog, plans and mock, then both loaded in PREVIOUS_ROUNDS alternating rounds, whole
 * completions and streams, for the CPU per request of every gateway process and the rate, each as
 * a ratio to the earlier code's (a refit's "no slower than before", measured in one run).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { connect as connectTcp } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { callMetadata, callUnary, createClient, StreamedCalls } from '@gateway/grpc';
import { loadGatewayGrpc, type ExecuteRequest, type ExecutorServiceClient } from '@gateway/proto';
import { connect as connectNats } from 'nats';
import { connectRedis } from '@gateway/redis';
import { natsServers } from '@gateway/testing';
import { freePort, quietMeteredUsage, startCluster, stopProcess, writeCatalog, type Cluster, type ClusterOptions } from '../tests/e2e/cluster.js';
import { cpuOf, cpuSince, fixed, processCpuMs, processRssMiB, summarize, table } from './measure.js';
import { buildPrevious, type PreviousBuild } from './previous.js';
import type { BenchSuite } from './run.js';
import { onStarted } from './started.js';

const HERE = fileURLToPath(new URL('./proxy/', import.meta.url));
const PIN = process.argv.includes('--pin');
const CONNECTIONS = 50;
const LOAD_SECONDS = 10;
const SEQUENTIAL = 1_000;
const OPEN_STREAMS = 10_000;
const KEY_VARIABLE = 'BENCH_UPSTREAM_KEY';
/** Alternating rounds of this checkout and the earlier code (--against), and the seconds of each measure. */
const PREVIOUS_ROUNDS = 3;
const PREVIOUS_SECONDS = 5;
const GATEWAY = ['edge', 'auth', 'router', 'executor', 'metering', 'redis', 'nats'] as const;
type GatewayProcess = (typeof GATEWAY)[number];

/** A request of about 1 KiB, as the issue's users send: a system prompt and a question. */
export function requestBody(model: string, stream: boolean): string {
  const system = 'You are a concise assistant for a team that runs many language models behind one gateway. '.repeat(6);
  const question = 'Summarise in one sentence why a gateway should add as little latency as it can to every request it serves. '.repeat(3);
  const body = {
    model,
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: question },
    ],
    max_tokens: 64,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
  return JSON.stringify(body);
}

/** Starts a node script of this folder; resolves with the process and the port it printed. */
function startScript(script: string, env: Record<string, string>): Promise<{ process: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [join(HERE, script)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    child.stdout!.once('data', (data: Buffer) => resolve({ process: child, port: Number(data.toString().trim()) }));
  });
}

/** Resolves once something accepts TCP connections on the port. */
async function waitForPort(port: number, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connectTcp(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${what} did not start on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The usage stream's limit in the benchmark: 4 GiB, about 14 million events at 300 bytes, so that
 * no run fills it (a full stream would hold and then shed usage, and measure that instead).
 */
const BENCH_USAGE_STREAM_MAX_BYTES = 4 * 1024 ** 3;

/** A Redis and a NATS with JetStream of the benchmark's own, so that their CPU is attributable. */
async function startState(directory: string): Promise<{ redis: ChildProcess; nats: ChildProcess; redisUrl: string; natsUrl: string }> {
  for (const binary of ['redis-server', 'nats-server']) {
    if (spawnSync('sh', ['-c', `command -v ${binary}`]).status !== 0) {
      throw new Error(`${binary} is not installed: run 'bash scripts/dependencies.sh' (it installs Debian's package) and try again.`);
    }
  }
  const [redisPort, natsPort] = [await freePort(), await freePort()];
  // Persistence off: a snapshot's fork would land in some run's CPU figures at random.
  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', directory], {
    stdio: 'ignore',
  });
  // JetStream bounded as deployed; the cluster's usage stream takes BENCH_USAGE_STREAM_MAX_BYTES of it.
  const natsConfig = join(directory, 'nats.conf');
  writeFileSync(natsConfig, `jetstream { max_file_store: 8GB, max_memory_store: 256MB }\n`);
  const nats = spawn('nats-server', ['-c', natsConfig, '-a', '127.0.0.1', '-p', String(natsPort), '-js', '-sd', join(directory, 'jetstream')], {
    stdio: 'ignore',
  });
  await Promise.all([waitForPort(redisPort, 'redis-server'), waitForPort(natsPort, 'nats-server')]);
  return { redis, nats, redisUrl: `redis://127.0.0.1:${redisPort}`, natsUrl: `nats://127.0.0.1:${natsPort}` };
}

/** Pins a process and all its threads to one core. */
function pin(pid: number, core: number): void {
  const result = spawnSync('taskset', ['-a', '-cp', String(core), String(pid)], { stdio: 'ignore' });
  if (result.status !== 0) throw new Error(`taskset could not pin process ${pid} to core ${core}`);
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/**
 * One POST; resolves with the ms until the response ended and, for a stream, until the first
 * event carrying content arrived (the time to first token).
 */
export function timedPost(url: URL, headers: Record<string, string>, body: string): Promise<{ totalMs: number; firstTokenMs: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: 'POST', agent, headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } },
      (response) => {
        let firstTokenMs = Number.NaN;
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (part: string) => {
          if (Number.isNaN(firstTokenMs)) {
            text += part;
            if (text.includes('"content":"')) firstTokenMs = performance.now() - started;
          }
        });
        response.on('end', () => {
          if (response.statusCode !== 200) reject(new Error(`${url.href} answered ${response.statusCode}: ${text.slice(0, 300)}`));
          else resolve({ totalMs: performance.now() - started, firstTokenMs });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** A path to measure: where requests go, with which headers and model, and the processes that serve it. */
export interface Path {
  label: string;
  url: URL;
  headers: Record<string, string>;
  model: string;
  pids: Partial<Record<string, number>>;
}

export async function sequential(
  path: Path,
  stream: boolean,
  count = SEQUENTIAL,
): Promise<{ total: ReturnType<typeof summarize>; firstToken: ReturnType<typeof summarize> }> {
  const body = requestBody(path.model, stream);
  for (let i = 0; i < 200; i += 1) await timedPost(path.url, path.headers, body);
  const totals: number[] = [];
  const firstTokens: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const timing = await timedPost(path.url, path.headers, body);
    totals.push(timing.totalMs);
    firstTokens.push(timing.firstTokenMs);
  }
  return { total: summarize(totals), firstToken: summarize(firstTokens) };
}

/**
 * Requests per second at CONNECTIONS connections for `seconds` (LOAD_SECONDS) after
 * `warmupSeconds` (2; 0: none) of the same load, and the CPU per request of each process.
 */
export async function throughput(
  path: Path,
  stream: boolean,
  options: { seconds?: number; warmupSeconds?: number } = {},
): Promise<{ perSecond: number; errors: number; requests: number; cpuPerRequest: Record<string, number> }> {
  const seconds = options.seconds ?? LOAD_SECONDS;
  const warmupSeconds = options.warmupSeconds ?? 2;
  const load = {
    url: path.url.href,
    method: 'POST' as const,
    connections: CONNECTIONS,
    headers: { ...path.headers, 'content-type': 'application/json' },
    body: requestBody(path.model, stream),
  };
  if (warmupSeconds > 0) await autocannon({ ...load, duration: warmupSeconds });
  await cpuSince(path.pids, cpuOf(path.pids));
  const before = cpuOf(path.pids);
  const result = await autocannon({ ...load, duration: seconds });
  const used = await cpuSince(path.pids, before);
  const count = Math.max(1, result.requests.total);
  return {
    perSecond: result.requests.total / seconds,
    errors: result.non2xx + result.errors + result.timeouts,
    requests: result.requests.total,
    cpuPerRequest: Object.fromEntries(Object.entries(used).map(([name, ms]) => [name, ms / count])),
  };
}

/** Opens OPEN_STREAMS streams through the gateway to the holding upstream; the summed RSS before and with them open. */
async function openStreamsMemory(
  cluster: Cluster,
  pids: Record<GatewayProcess, number>,
): Promise<{ idleMiB: number; openMiB: number; opened: number; perProcess: Record<string, number>; before: Record<string, number> }> {
  const rss = () => Object.fromEntries(GATEWAY.map((name) => [name, processRssMiB(pids[name])]));
  const sum = (values: Record<string, number>) => Object.values(values).reduce((a, b) => a + b, 0);
  const idle = rss();
  const many = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const url = new URL(`${cluster.baseUrl}/chat/completions`);
  const body = requestBody('bench-slow', true);
  const requests: Array<ReturnType<typeof httpRequest>> = [];
  let opened = 0;
  const batch = 500;
  for (let start = 0; start < OPEN_STREAMS; start += batch) {
    await Promise.all(
      Array.from(
        { length: Math.min(batch, OPEN_STREAMS - start) },
        () =>
          new Promise<void>((resolve) => {
            const request = httpRequest(
              url,
              { method: 'POST', agent: many, headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' } },
              (response) => {
                response.once('data', () => {
                  if (response.statusCode === 200) opened += 1;
                  resolve();
                });
                response.once('end', resolve);
              },
            );
            request.on('error', () => resolve());
            request.setTimeout(60_000, () => {
              request.destroy();
              resolve();
            });
            request.end(body);
            requests.push(request);
          }),
      ),
    );
  }
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const open = rss();
  for (const request of requests) request.destroy();
  many.destroy();
  return {
    idleMiB: sum(idle),
    openMiB: sum(open),
    opened,
    perProcess: Object.fromEntries(GATEWAY.map((name) => [name, open[name]! - idle[name]!])),
    before: idle,
  };
}

const TRANSPORT_ROUNDS = 2;
const TRANSPORT_SECONDS = 4;

/**
 * Streams run against the executor directly, carried the two ways the edge can: a streamed call on
 * long-lived CompleteCalls streams (as the edge does) and a StreamComplete call each (as it does
 * while no stream is open). Rounds alternate, so that both ways see the same machine; figures are
 * the sums over the rounds.
 */
async function streamTransports(
  executorPort: number,
  executorPid: number,
): Promise<Array<{ label: string; perSecond: number; executorMs: number; callerMs: number }>> {
  const client: ExecutorServiceClient = createClient(loadGatewayGrpc().gateway.executor.v1.ExecutorService, `127.0.0.1:${executorPort}`);
  const calls = new StreamedCalls<{ complete: [ExecuteRequest, unknown] }, { stream: [ExecuteRequest, unknown] }>({
    open: () => client.CompleteCalls(),
    streams: 8,
    cancellable: true,
    unary: { complete: (request, options) => callUnary(client, client.Complete, request, options) },
  });
  try {
    const request: ExecuteRequest = {
      request_id: 'bench',
      model_id: 'bench-model',
      request: {
        model: 'bench-model',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'ROLE_USER', text: 'Summarise in one sentence why a gateway should add as little latency as it can.' }],
      },
    };
    const ways = [
      {
        label: 'streamed call on CompleteCalls streams',
        one: async () => {
          for await (const _event of calls.stream('stream', request, { deadlineMs: 10_000, window: 8 })!);
        },
      },
      {
        label: 'StreamComplete call of its own',
        one: async () => {
          const { metadata, callOptions } = callMetadata({ deadlineMs: 10_000 });
          for await (const _event of client.StreamComplete(request, metadata, callOptions));
        },
      },
    ];
    while (calls.openStreams < 8) await new Promise((resolve) => setTimeout(resolve, 50));
    const totals = ways.map((way) => ({ label: way.label, count: 0, seconds: 0, executorMs: 0, callerMs: 0 }));
    for (let round = 0; round < TRANSPORT_ROUNDS; round += 1) {
      for (const [index, way] of ways.entries()) {
        const total = totals[index]!;
        const executorBefore = processCpuMs(executorPid);
        const callerBefore = process.cpuUsage();
        const end = performance.now() + TRANSPORT_SECONDS * 1000;
        await Promise.all(
          Array.from({ length: CONNECTIONS }, async () => {
            while (performance.now() < end) {
              await way.one();
              total.count += 1;
            }
          }),
        );
        const caller = process.cpuUsage(callerBefore);
        total.seconds += TRANSPORT_SECONDS;
        total.executorMs += processCpuMs(executorPid) - executorBefore;
        total.callerMs += (caller.user + caller.system) / 1000;
      }
    }
    return totals.map((total) => ({
      label: total.label,
      perSecond: total.count / total.seconds,
      executorMs: total.executorMs / total.count,
      callerMs: total.callerMs / total.count,
    }));
  } finally {
    await calls.close(1_000);
    client.close();
  }
}

/** What the gateway's state costs per whole completion under load: Redis commands and bytes, JetStream messages and bytes. */
export async function stateTraffic(
  path: Path,
  cluster: Cluster,
): Promise<{ requests: number; redisCalls: Record<string, number>; redisIn: number; redisOut: number; natsMessages: number; natsBytes: number }> {
  const redis = connectRedis(cluster.redisUrl);
  const nats = await connectNats({ servers: natsServers(cluster.natsUrl) });
  try {
    const manager = await nats.jetstreamManager();
    const snapshot = async () => {
      const [stats, commands, stream, usage] = await Promise.all([
        redis.info('stats'),
        redis.info('commandstats'),
        manager.streams.info(cluster.usageStream),
        quietMeteredUsage(redis, cluster.apiKey),
      ]);
      const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
      const calls: Record<string, number> = {};
      for (const match of commands.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)) calls[match[1]!] = Number(match[2]);
      return {
        requests: usage.requests,
        calls,
        input: field('total_net_input_bytes'),
        output: field('total_net_output_bytes'),
        messages: stream.state.messages,
        bytes: stream.state.bytes,
      };
    };
    const before = await snapshot();
    await autocannon({
      url: path.url.href,
      method: 'POST',
      connections: CONNECTIONS,
      headers: { ...path.headers, 'content-type': 'application/json' },
      body: requestBody(path.model, false),
      duration: 5,
    });
    const after = await snapshot();
    const requests = Math.max(1, after.requests - before.requests);
    const redisCalls: Record<string, number> = {};
    // The snapshots' own INFO calls are left out.
    for (const [name, calls] of Object.entries(after.calls))
      if (name !== 'info' && calls > (before.calls[name] ?? 0)) redisCalls[name] = (calls - (before.calls[name] ?? 0)) / requests;
    return {
      requests,
      redisCalls,
      redisIn: (after.input - before.input) / requests,
      redisOut: (after.output - before.output) / requests,
      natsMessages: (after.messages - before.messages) / requests,
      natsBytes: (after.bytes - before.bytes) / requests,
    };
  } finally {
    redis.disconnect();
    await nats.close();
  }
}

/** The processes of one benchmark run, started by startProxyBench. */
export interface ProxyBench {
  cluster: Cluster;
  /** The gateway's processes, Redis and NATS included. */
  pids: Record<GatewayProcess, number>;
  /** The upstream alone, the bare proxy, the gateway: in that order. */
  paths: [Path, Path, Path];
  mockPids: number[];
  bareProxyPid: number;
  /**
   * Starts another gateway beside this one, from the built checkout at `root` (an earlier commit,
   * bench/previous.ts), with a Redis and NATS of its own and the same catalog, plans and mock
   * upstream; it is stopped with this one. Its path and processes are measured as `paths[2]` and
   * `pids` are.
   */
  startBeside(root: string): Promise<{ cluster: Cluster; pids: Record<GatewayProcess, number>; path: Path }>;
  stop(): Promise<void>;
}

/**
 * Starts Redis, NATS, the mock upstreams (one answering at once, one holding streams open), the
 * bare proxy and the gateway with a catalog of two openai-compatible models pointing at them.
 * `nodeArgs` adds node flags per service (`--cpu-prof` to profile); `options.requestLog` runs the
 * request-log service too, on that database, `options.guard` the guard service, `options.cache` the
 * cache service with its entries' Redis, `options.batch` the batch service on a test database;
 * `options.env` is added to the services' environment.
 */
export async function startProxyBench(
  nodeArgs: ClusterOptions['nodeArgs'] = {},
  options: Pick<ClusterOptions, 'requestLog' | 'guard' | 'cache' | 'batch' | 'env'> = {},
): Promise<ProxyBench> {
  const directory = mkdtempSync(join(tmpdir(), 'bench-proxy-'));
  const started: ChildProcess[] = [];
  let cluster: Cluster | undefined;
  const besides: Cluster[] = [];
  const stop = async () => {
    await Promise.all([cluster, ...besides].map((each) => each?.stop()));
    await Promise.all(started.map((child) => stopProcess(child)));
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    const state = await startState(directory);
    started.push(state.redis, state.nats);
    const mock = await startScript('mock-upstream.mjs', {});
    const holding = await startScript('mock-upstream.mjs', { MOCK_HOLD_STREAMS: '1' });
    started.push(mock.process, holding.process);
    const upstreamUrl = `http://127.0.0.1:${mock.port}/v1`;
    const bare = await startScript('bare-proxy.mjs', { UPSTREAM: upstreamUrl });
    started.push(bare.process);

    const entry = (id: string, port: number) => `  - id: ${id}
    provider: openai-compatible
    owned_by: bench
    created: 1735689600
    upstream: { model: gpt-4o-mini, base_url: "http://127.0.0.1:${port}/v1", api_key_env: ${KEY_VARIABLE} }
    pricing: { input: "0.15", cached_input: "0.075", output: "0.60" }
    context_window: 128000
    max_output_tokens: 16384
    capabilities: { tools: true, vision: true, streaming: true, json_mode: true }
    quality_tier: standard`;
    const catalog = writeCatalog('bench-proxy', [entry('bench-model', mock.port), entry('bench-slow', holding.port)]);
    // A Pro key whose limits are raised so that no request is refused: every request still goes
    // through the sliding-window reservation and its settlement, as a limited key's do.
    const plans = writeUnlimitedPlans(directory);
    /** A gateway from `root` (this checkout when undefined) on `state`, with its processes and its path to the mock. */
    const startGateway = async (stores: Awaited<ReturnType<typeof startState>>, root?: string) => {
      const started = await startCluster({
        ...(root === undefined ? options : {}),
        ...(root === undefined ? {} : { root }),
        plan: 'pro',
        nodeArgs,
        env: {
          REDIS_URL: stores.redisUrl,
          NATS_URL: stores.natsUrl,
          CATALOG_PATH: catalog,
          AUTH_PLANS_PATH: plans,
          [KEY_VARIABLE]: 'sk-bench',
          UPSTREAM_MAX_CONNECTIONS: String(OPEN_STREAMS + 1_000),
          USAGE_STREAM_MAX_BYTES: String(BENCH_USAGE_STREAM_MAX_BYTES),
          ...(root === undefined ? options.env : {}),
        },
      });
      const pids = {
        ...Object.fromEntries((['edge', 'auth', 'router', 'executor', 'metering'] as const).map((name) => [name, started.processes[name].pid!])),
        redis: stores.redis.pid!,
        nats: stores.nats.pid!,
      } as Record<GatewayProcess, number>;
      const path: Path = {
        label: 'gateway',
        url: new URL(`${started.baseUrl}/chat/completions`),
        headers: { authorization: `Bearer ${started.apiKey}` },
        model: 'bench-model',
        pids: { ...pids, mock: mock.process.pid! },
      };
      return { cluster: started, pids, path };
    };
    // The cluster (and its clean-up) use the benchmark's own Redis and NATS.
    process.env.REDIS_URL = state.redisUrl;
    process.env.NATS_URL = state.natsUrl;
    const gateway = await startGateway(state);
    cluster = gateway.cluster;
    const pids = gateway.pids;
    const paths: [Path, Path, Path] = [
      { label: 'upstream alone', url: new URL(`${upstreamUrl}/chat/completions`), headers: {}, model: 'bench-model', pids: { mock: mock.process.pid! } },
      {
        label: 'bare node:http + fetch proxy',
        url: new URL(`http://127.0.0.1:${bare.port}/v1/chat/completions`),
        headers: {},
        model: 'bench-model',
        pids: { proxy: bare.process.pid!, mock: mock.process.pid! },
      },
      gateway.path,
    ];
    const startBeside = async (root: string) => {
      const own = await startState(mkdtempSync(join(directory, 'beside-')));
      started.push(own.redis, own.nats);
      const beside = await startGateway(own, root);
      besides.push(beside.cluster);
      return beside;
    };
    return { cluster, pids, paths, mockPids: [mock.process.pid!, holding.process.pid!], bareProxyPid: bare.process.pid!, startBeside, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Writes a plans file to `directory` whose every plan's limits are too high to refuse anything
 * (a bench measures the path, not the limits: each request still goes through the sliding-window
 * reservation and its settlement); returns its path.
 */
export function writeUnlimitedPlans(directory: string): string {
  const plans = join(directory, 'plans.yaml');
  writeFileSync(
    plans,
    ['starter', 'pro', 'enterprise']
      .map((plan) => `${plan}:\n  requests_per_minute: 100000000\n  tokens_per_minute: 100000000000\n  catalog_fallbacks: false\n`)
      .join(''),
  );
  return plans;
}

/** The earlier code `--against=<ref>` names, built; undefined without the flag. */
function previousCode(): PreviousBuild | undefined {
  const ref = process.argv.find((argument) => argument.startsWith('--against='))?.slice('--against='.length);
  return ref ? buildPrevious(ref) : undefined;
}

/** The gateway's own CPU ms per request of a throughput run (the mock left out). */
function gatewayCpu(result: Awaited<ReturnType<typeof throughput>>): number {
  return Object.entries(result.cpuPerRequest)
    .filter(([name]) => name !== 'mock')
    .reduce((sum, [, ms]) => sum + ms, 0);
}

/**
 * This checkout's gateway and the earlier code's, loaded in turn for PREVIOUS_ROUNDS rounds (whole
 * completions, then streams; each measure PREVIOUS_SECONDS after 1 s of the same load), after 5 s
 * of each load on each to warm the earlier one up (it has just started): the sums over the
 * rounds, each round's ratio, and by process what this checkout spends more or less.
 */
async function againstPrevious(current: Path, previous: Path, build: PreviousBuild): Promise<void> {
  // The earlier gateway has just started: both are loaded for a while before anything is counted.
  for (const path of [previous, current]) for (const stream of [false, true]) await throughput(path, stream, { seconds: 2, warmupSeconds: 3 });
  for (const stream of [false, true]) {
    const totals = [current, previous].map(() => ({ requests: 0, errors: 0, cpuMs: 0, byProcess: {} as Record<string, number>, rounds: [] as number[] }));
    for (let round = 0; round < PREVIOUS_ROUNDS; round += 1) {
      for (const [index, path] of [previous, current].entries()) {
        const total = totals[1 - index]!;
        const result = await throughput(path, stream, { seconds: PREVIOUS_SECONDS, warmupSeconds: 1 });
        total.requests += result.requests;
        total.errors += result.errors;
        total.cpuMs += gatewayCpu(result) * result.requests;
        for (const [name, ms] of Object.entries(result.cpuPerRequest)) total.byProcess[name] = (total.byProcess[name] ?? 0) + ms * result.requests;
        total.rounds.push(gatewayCpu(result));
      }
    }
    const [now, before] = totals as [(typeof totals)[number], (typeof totals)[number]];
    const perRequest = (total: typeof now) => total.cpuMs / Math.max(1, total.requests);
    console.log(
      `${stream ? 'Streams' : 'Whole completions'} beside the earlier code (${build.subject.slice(0, 90)}), ${PREVIOUS_ROUNDS} alternating rounds of ${PREVIOUS_SECONDS} s at ${CONNECTIONS} connections:\n`,
    );
    table(
      ['code', stream ? 'streams/s' : 'completions/s', 'errors', 'CPU ms per request (mock excluded)', 'vs earlier', 'per round'],
      [
        [build.commit.slice(0, 7), Math.round(before.requests / (PREVIOUS_ROUNDS * PREVIOUS_SECONDS)), before.errors, fixed(perRequest(before), 3), '', ''],
        [
          'this checkout',
          Math.round(now.requests / (PREVIOUS_ROUNDS * PREVIOUS_SECONDS)),
          now.errors,
          fixed(perRequest(now), 3),
          fixed(perRequest(now) / perRequest(before)),
          now.rounds.map((value, index) => fixed(value / before.rounds[index]!)).join(', '),
        ],
      ],
    );
    const byProcess = GATEWAY.map(
      (name) => `${name} ${fixed((now.byProcess[name] ?? 0) / Math.max(1, now.requests) - (before.byProcess[name] ?? 0) / Math.max(1, before.requests), 3)}`,
    );
    console.log(`\nThis checkout - the earlier code, CPU ms per request by process: ${byProcess.join(', ')}.\n`);
  }
}

export const suite: BenchSuite = {
  name: 'proxy',
  description: 'the gateway in front of an openai-compatible upstream, beside the upstream alone and a bare node:http + fetch proxy',
  run: async () => {
    // Built before the clusters start, so that the build's CPU is in no figure.
    const previous = previousCode();
    await onStarted(startProxyBench(), async (bench) => {
      const { cluster, pids, paths } = bench;
      if (PIN) {
        for (const pid of [...Object.values(pids), bench.bareProxyPid]) pin(pid, 0);
        for (const pid of [process.pid, ...bench.mockPids]) pin(pid, 1);
      }
      console.log(
        `${new Date().toISOString().slice(0, 10)}, ${PIN ? 'pinned: the gateway (Redis and NATS included) and the bare proxy on core 0, the load generator and the mock on core 1' : 'unpinned: every process free to use both cores'}; Node ${process.version}.\n`,
      );

      if (!PIN) {
        // First, on the fresh cluster warmed by a few hundred requests: what the streams cost,
        // not what a throughput run left in the heaps.
        for (const stream of [false, true]) await sequential({ ...paths[2], label: 'warm-up' }, stream, 100);
        const memory = await openStreamsMemory(cluster, pids);
        console.log(
          `${OPEN_STREAMS} concurrent streams held open by a slow upstream (${memory.opened} opened), on the cluster warmed by a few hundred requests: resident memory of every gateway process ${fixed(memory.idleMiB, 0)} MiB before, ${fixed(memory.openMiB, 0)} MiB with the streams open (${fixed(memory.openMiB / 1024, 2)} GiB). Added by process (MiB): ${GATEWAY.map((name) => `${name} ${fixed(memory.perProcess[name]!, 0)}`).join(', ')}; before, by process: ${GATEWAY.map((name) => `${name} ${fixed(memory.before[name]!, 0)}`).join(', ')}.\n`,
        );
        // The streams are gone once their connections closed.
        await new Promise((resolve) => setTimeout(resolve, 3_000));
      }

      // One request at a time.
      const latency = { whole: [] as Array<ReturnType<typeof summarize>>, firstToken: [] as Array<ReturnType<typeof summarize>> };
      for (const path of paths) {
        latency.whole.push((await sequential(path, false)).total);
        latency.firstToken.push((await sequential(path, true)).firstToken);
      }
      const added = (series: Array<ReturnType<typeof summarize>>, index: number, key: 'p50' | 'p99') => series[index]![key] - series[0]![key];
      console.log(`One request at a time, ${SEQUENTIAL} each after 200 to warm up (ms; "added" is beyond the upstream alone):\n`);
      table(
        ['path', 'whole p50', 'whole p99', 'added p50', 'stream first token p50', 'first token p99', 'added first token p50'],
        paths.map((path, index) => [
          path.label,
          fixed(latency.whole[index]!.p50),
          fixed(latency.whole[index]!.p99),
          index === 0 ? '' : fixed(added(latency.whole, index, 'p50')),
          fixed(latency.firstToken[index]!.p50),
          fixed(latency.firstToken[index]!.p99),
          index === 0 ? '' : fixed(added(latency.firstToken, index, 'p50')),
        ]),
      );
      console.log(
        `\nGateway vs bare proxy, added p50: whole ${fixed(added(latency.whole, 2, 'p50'))} vs ${fixed(added(latency.whole, 1, 'p50'))} ms, first token ${fixed(added(latency.firstToken, 2, 'p50'))} vs ${fixed(added(latency.firstToken, 1, 'p50'))} ms.\n`,
      );

      // Under load.
      for (const stream of [false, true]) {
        const results = [];
        for (const path of paths) results.push(await throughput(path, stream));
        const [, proxyResult, gatewayResult] = results as [
          Awaited<ReturnType<typeof throughput>>,
          Awaited<ReturnType<typeof throughput>>,
          Awaited<ReturnType<typeof throughput>>,
        ];
        const own = (result: Awaited<ReturnType<typeof throughput>>) =>
          Object.entries(result.cpuPerRequest)
            .filter(([name]) => name !== 'mock')
            .reduce((sum, [, ms]) => sum + ms, 0);
        console.log(`${stream ? 'Streams (20 chunks and a usage chunk)' : 'Whole completions'}, ${CONNECTIONS} connections for ${LOAD_SECONDS} s:\n`);
        table(
          [stream ? 'streams/s' : 'completions/s', 'errors', 'CPU ms per request (mock excluded)', 'vs bare proxy', 'path'],
          results.map((result, index) => [
            Math.round(result.perSecond),
            result.errors,
            fixed(own(result), 3),
            index === 0 ? '' : fixed(own(result) / own(proxyResult)),
            paths[index]!.label,
          ]),
        );
        console.log(
          `\nThroughput gateway / bare proxy: ${fixed(gatewayResult.perSecond / proxyResult.perSecond)}. The gateway's CPU ms per request by process: ${GATEWAY.map((name) => `${name} ${fixed(gatewayResult.cpuPerRequest[name]!, 3)}`).join(', ')} (total ${fixed(own(gatewayResult), 3)}; bare proxy ${fixed(own(proxyResult), 3)}).\n`,
        );
      }

      // What a request costs the state (the capacity model in deploy/README.md rests on it).
      const traffic = await stateTraffic(paths[2], cluster);
      const scripts = (traffic.redisCalls.evalsha ?? 0) + (traffic.redisCalls.eval ?? 0);
      const inside = Object.entries(traffic.redisCalls)
        .filter(([name]) => name !== 'evalsha' && name !== 'eval')
        .sort((one, other) => other[1] - one[1]);
      console.log(
        `State per whole completion (${traffic.requests} metered, ${CONNECTIONS} connections): Redis ${fixed(scripts, 2)} script calls; ${fixed(
          inside.reduce((sum, [, calls]) => sum + calls, 0),
          1,
        )} commands counted by Redis beside them, scripts' own included (${inside
          .slice(0, 8)
          .map(([name, calls]) => `${name} ${fixed(calls, 2)}`)
          .join(
            ', ',
          )}, ...); ${fixed(traffic.redisIn, 0)} bytes in, ${fixed(traffic.redisOut, 0)} bytes out. JetStream ${fixed(traffic.natsMessages, 3)} messages, ${fixed(traffic.natsBytes, 0)} bytes stored.\n`,
      );

      // The edge-to-executor leg of a stream alone, both ways the edge can carry it.
      const legs = await streamTransports(cluster.ports.executor, pids.executor);
      console.log(
        `The executor called directly (this process standing in for the edge), ${CONNECTIONS} streams at a time, ${TRANSPORT_ROUNDS} alternating rounds of ${TRANSPORT_SECONDS} s each way:\n`,
      );
      table(
        ['carried as', 'streams/s', 'executor CPU ms per stream', 'caller CPU ms per stream'],
        legs.map((leg) => [leg.label, Math.round(leg.perSecond), fixed(leg.executorMs, 3), fixed(leg.callerMs, 3)]),
      );
      console.log('');

      if (previous) await againstPrevious(paths[2], (await bench.startBeside(previous.root)).path, previous);
    });
  },
};
