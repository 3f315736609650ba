/**
 * A latency probe that runs in a thread of its own, for the hostile-body drill and its benchmark
 * (bench/hostile.bench.ts): the probed service's latency, undisturbed by the caller's own work.
 */
import { Worker } from 'node:worker_threads';

/**
 * Probes a URL every `intervalMs` from a thread of its own, so that the drill's own work (building
 * megabyte bodies) never delays a probe; resolves the latencies in ms when stopped.
 */
export function startProbe(url: string, intervalMs: number): { stop(): Promise<number[]> } {
  const worker = new Worker(
    `
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
  `,
    { eval: true, workerData: { url, intervalMs } },
  );
  return {
    stop: () =>
      new Promise((resolve) => {
        worker.once('message', (latencies: number[]) => {
          void worker.terminate();
          resolve(latencies);
        });
        worker.postMessage('stop');
      }),
  };
}

/** The p-th percentile of latencies (the nearest rank below). */
export const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};
