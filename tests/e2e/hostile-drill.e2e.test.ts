/**
 * The hostile-body drill against a freshly started cluster: 10,000 bodies, 16 at a time, mutated
 * requests with heavy ones among them (megabytes of one letter, emoji, CJK, random code points,
 * thousands of messages, structures nested thousands deep), while valid requests keep coming and
 * a separate thread probes the edge's /healthz. No answer may be a 5xx or take 2 s, /healthz must
 * stay under 50 ms at p99, and no service's event loop may be held for long.
 */
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './cluster.js';
import { checkHostileAnswer, HEAVY_BODY_KINDS, heavyHostileBodies, hostileBodies } from './hostile-bodies.js';

const BODIES = 10_000;
const CONCURRENCY = 16;
/** One body in this many is a heavy one: about three of each kind. */
const HEAVY_EVERY = 100;
const MAX_ANSWER_MS = 2_000;
const MAX_HEALTHZ_P99_MS = 50;

let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster();
});

afterAll(async () => {
  await cluster?.stop();
});

/**
 * Probes a URL every `intervalMs` from a thread of its own, so that the drill's own work (building
 * megabyte bodies) never delays a probe; resolves the latencies in ms when stopped.
 */
function startProbe(url: string, intervalMs: number): { stop(): Promise<number[]> } {
  const worker = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads');
    const http = require('node:http');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const latencies = [];
    let stopped = false;
    parentPort.on('message', () => { stopped = true; });
    const probe = () => {
      if (stopped) { parentPort.postMessage(latencies); return; }
      const started = performance.now();
      const request = http.get(workerData.url, { agent, timeout: 5000 }, (response) => {
        response.resume();
        response.on('end', () => { latencies.push(performance.now() - started); setTimeout(probe, workerData.intervalMs); });
      });
      request.on('error', () => { latencies.push(5000); setTimeout(probe, workerData.intervalMs); });
    };
    probe();
  `, { eval: true, workerData: { url, intervalMs } });
  return {
    stop: () => new Promise((resolve) => {
      worker.once('message', (latencies: number[]) => { void worker.terminate(); resolve(latencies); });
      worker.postMessage('stop');
    }),
  };
}

const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

/** A service's gauge from its Prometheus text. */
async function gauge(metricsUrl: string, name: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split('\n').find((entry) => entry.startsWith(`${name}{`) || entry.startsWith(`${name} `));
  if (!line) throw new Error(`${metricsUrl} has no ${name}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('the hostile-body drill', () => {
  it(`answers ${BODIES} hostile bodies, ${CONCURRENCY} at a time, with no 5xx and none slower than ${MAX_ANSWER_MS} ms, /healthz under ${MAX_HEALTHZ_P99_MS} ms at p99`, async () => {
    const origin = cluster.baseUrl.replace(/\/v1$/, '');
    const metricsUrls: Record<string, string> = {
      edge: `${origin}/metrics`,
      auth: `http://127.0.0.1:${cluster.ports.authMetrics}/metrics`,
      router: `http://127.0.0.1:${cluster.ports.routerMetrics}/metrics`,
      executor: `http://127.0.0.1:${cluster.ports.executorMetrics}/metrics`,
      metering: `http://127.0.0.1:${cluster.ports.meteringMetrics}/metrics`,
    };
    // A scrape starts each service's event-loop interval: what the drill then reads is the drill's.
    for (const url of Object.values(metricsUrls)) await gauge(url, 'gateway_event_loop_delay_max_seconds');

    const post = (body: string) => fetch(`${cluster.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(15_000),
    });
    const light = hostileBodies(BODIES, ['sim-mini', 'sim-standard', 'auto'], 4242);
    const heavy = heavyHostileBodies('sim-mini', Math.ceil(BODIES / HEAVY_EVERY));
    let taken = 0;
    const nextBody = (): string | undefined => {
      if (taken >= BODIES) return undefined;
      taken += 1;
      const source = taken % HEAVY_EVERY === 0 ? heavy : light;
      const next = source.next();
      return next.done ? light.next().value : next.value;
    };

    const probe = startProbe(`${origin}/healthz`, 20);
    let drilling = true;
    const validLatencies: number[] = [];
    const valid = (async () => {
      while (drilling) {
        const started = performance.now();
        const response = await post(JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: 'What is the capital of France?' }], max_tokens: 16 }));
        await response.arrayBuffer();
        expect(response.status).toBe(200);
        validLatencies.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();

    const statuses = new Map<number, number>();
    const slow: string[] = [];
    const drillStarted = performance.now();
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        for (let body = nextBody(); body !== undefined; body = nextBody()) {
          const started = performance.now();
          let response: Response;
          let text: string;
          try {
            response = await post(body);
            text = await response.text();
          } catch (error) {
            throw new Error(`no answer (${(error as Error).message}) in ${Math.round(performance.now() - started)} ms for ${body.slice(0, 200)}... (${body.length} characters)`);
          }
          const elapsed = performance.now() - started;
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          checkHostileAnswer(body, response, text);
          if (elapsed > MAX_ANSWER_MS) slow.push(`${Math.round(elapsed)} ms (${response.status}) for ${body.slice(0, 120)}... (${body.length} characters)`);
        }
      }));
    } catch (error) {
      for (const service of ['edge', 'auth'] as const) process.stdout.write(`--- ${service} log ---\n${cluster.logs[service].join('').slice(-3_000)}\n`);
      throw error;
    } finally {
      drilling = false;
    }
    await valid;
    const healthz = await probe.stop();
    const drillSeconds = (performance.now() - drillStarted) / 1000;

    const loops: Record<string, number> = {};
    for (const [service, url] of Object.entries(metricsUrls)) loops[service] = await gauge(url, 'gateway_event_loop_delay_max_seconds');
    process.stdout.write(`hostile drill: ${BODIES} bodies in ${drillSeconds.toFixed(1)} s, statuses ${JSON.stringify(Object.fromEntries(statuses))}; `
      + `/healthz p50 ${percentile(healthz, 50).toFixed(1)} ms, p99 ${percentile(healthz, 99).toFixed(1)} ms, max ${Math.max(...healthz).toFixed(1)} ms over ${healthz.length} probes; `
      + `valid requests p50 ${percentile(validLatencies, 50).toFixed(1)} ms, p99 ${percentile(validLatencies, 99).toFixed(1)} ms (${validLatencies.length}); `
      + `event loop max (s) ${JSON.stringify(loops)}\n`);

    expect(slow).toEqual([]);
    expect([...statuses.keys()].every((status) => status < 500)).toBe(true);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(100);
    expect(healthz.length).toBeGreaterThan(50);
    expect(percentile(healthz, 99)).toBeLessThan(MAX_HEALTHZ_P99_MS);
    expect(validLatencies.length).toBeGreaterThan(10);
    expect(HEAVY_BODY_KINDS).toBeLessThanOrEqual(BODIES / HEAVY_EVERY);
  }, 600_000);
});
