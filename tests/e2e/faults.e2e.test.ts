/**
 * Faults injected into a running cluster: a service killed outright must cost a clear, retryable
 * error (never a hang or a 500) and nothing already accepted, and the cluster must heal when the
 * service comes back, without restarting anything else.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { eventually } from '@gateway/testing';
import { startCluster, stopProcess, type Cluster } from './cluster.js';

let cluster: Cluster;
let redis: Redis;

beforeAll(async () => {
  cluster = await startCluster();
  redis = new Redis(cluster.redisUrl);
});

afterAll(async () => {
  await redis?.quit();
  await cluster?.stop();
});

function complete(model: string, content = 'hello'): Promise<Response> {
  return fetch(`${cluster.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
    signal: AbortSignal.timeout(10_000),
  });
}

async function statusOf(response: Promise<Response>): Promise<number> {
  const answer = await response;
  await answer.arrayBuffer();
  return answer.status;
}

describe('a killed router', () => {
  it('still serves explicit models from the pushed catalog, and auto again once it is back', async () => {
    await stopProcess(cluster.processes.router, 'SIGKILL');
    expect(await statusOf(complete('sim-mini'))).toBe(200);
    const auto = await complete('auto');
    expect(auto.status).toBe(503);
    expect(auto.headers.get('retry-after')).toBeTruthy();
    await auto.arrayBuffer();
    cluster.restart('router');
    await eventually(async () => (await statusOf(complete('auto'))) === 200 || undefined, 'auto to answer again', 15_000, 200);
  });
});

describe('a killed auth', () => {
  it('answers 503 with Retry-After, never lets a request through, and recovers by itself', async () => {
    await stopProcess(cluster.processes.auth, 'SIGKILL');
    const refused = await complete('sim-mini');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBeTruthy();
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('auth_unavailable');
    cluster.restart('auth');
    await eventually(async () => (await statusOf(complete('sim-mini'))) === 200 || undefined, 'auth to answer again', 15_000, 200);
  });
});

describe('a killed executor', () => {
  it('answers 503 while it is gone and serves again when it returns', async () => {
    await stopProcess(cluster.processes.executor, 'SIGKILL');
    expect(await statusOf(complete('sim-mini'))).toBe(503);
    cluster.restart('executor');
    await eventually(async () => (await statusOf(complete('sim-mini'))) === 200 || undefined, 'the executor to answer again', 15_000, 200);
  });
});

describe('a killed metering', () => {
  it('loses no usage event: those published while it was down are metered when it returns', async () => {
    await stopProcess(cluster.processes.metering, 'SIGKILL');
    const response = await complete('sim-mini');
    expect(response.status).toBe(200);
    const requestId = response.headers.get('x-request-id')!;
    const reported = ((await response.json()) as { gateway: { cost_usd: number } }).gateway.cost_usd;
    cluster.restart('metering');
    const record = await eventually(async () => {
      const hash = await redis.hgetall(`metering:event:${requestId}`);
      return Object.keys(hash).length > 0 ? hash : undefined;
    }, 'the event to be metered after the restart', 20_000, 100);
    expect(Number(record.cost_usd)).toBe(reported);
  });
});

describe('a stopped NATS', () => {
  it('keeps answering and meters every request once NATS is back', async () => {
    const { spawn } = await import('node:child_process');
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { freePort } = await import('./cluster.js');
    const port = await freePort();
    const store = mkdtempSync(join(tmpdir(), 'gateway-nats-'));
    const startNats = () => spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], { stdio: 'ignore' });
    let nats = startNats();
    const own = await startCluster({ env: { NATS_URL: `nats://127.0.0.1:${port}` } });
    try {
      const call = () => fetch(`${own.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${own.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: 'hello' }] }),
        signal: AbortSignal.timeout(10_000),
      });
      await stopProcess(nats, 'SIGKILL');
      const during = await Promise.all([call(), call(), call()]);
      expect(during.map((response) => response.status)).toEqual([200, 200, 200]);
      const ids = during.map((response) => response.headers.get('x-request-id')!);
      await Promise.all(during.map((response) => response.arrayBuffer()));
      nats = startNats();
      for (const id of ids) {
        await eventually(async () => {
          const hash = await redis.hgetall(`metering:event:${id}`);
          return Object.keys(hash).length > 0 ? hash : undefined;
        }, `event ${id} to be metered after NATS returned`, 30_000, 200);
      }
    } finally {
      await own.stop();
      await stopProcess(nats);
      rmSync(store, { recursive: true, force: true });
    }
  });
});
