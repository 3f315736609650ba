/**
 * The cost of a quota decision. Open-loop, paced load on auth's decision (the whole of it: key
 * lookup, both limits, the reservation, one Redis script call) at 1,000 and 5,000 decisions/s,
 * both as a unary CheckKey call each and as messages on open Decide streams (what the edge uses),
 * with latency measured from each call's scheduled start, so a stall is charged to every call it
 * delays (no coordinated omission), and the CPU each side spends per decision. Then the edge's
 * added latency with everything warm: a metered key (decision, reservation and settlement) against
 * an unlimited one (lookup only) and against the executor alone. Target: decision p99 under 1 ms.
 */
import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { StreamedCalls, callUnary, createClient, type CallOptions } from '@gateway/grpc';
import {
  loadGatewayGrpc,
  type AuthServiceClient,
  type CheckKeyRequest,
  type CheckKeyResponseOutput,
  type CreateKeyRequest,
  type ExecuteRequest,
  type ExecuteResponseOutput,
  type SettleUsageRequest,
  type SettleUsageResponseOutput,
} from '@gateway/proto';
import { startCluster } from '../tests/e2e/cluster.js';
import { authCalls } from '../services/auth/src/testing/auth-calls.js';
import type { BenchSuite } from './run.js';
import { fixed, processCpuMs, summarize, table, timeSequential } from './measure.js';

const CATALOG = new URL('./catalog.yaml', import.meta.url).pathname;
const KEYS = 500;
const SECONDS = 5;
/** Decide streams, as many as an edge opens by default (EDGE_AUTH_STREAMS). */
const STREAMS = 2;

/**
 * Sends `rate` calls per second for `seconds`, paced by the clock (every call due is sent on each
 * 1 ms tick). Returns each call's ms from its scheduled start (what a caller waits, queueing
 * included) and from its actual send (the service time; the tick adds up to 1 ms to the former).
 */
async function openLoop(
  rate: number,
  seconds: number,
  call: (index: number) => Promise<unknown>,
): Promise<{ fromSchedule: number[]; fromSend: number[]; failures: number }> {
  const total = rate * seconds;
  const interval = 1000 / rate;
  const fromSchedule: number[] = [];
  const fromSend: number[] = [];
  let failures = 0;
  const pending: Array<Promise<void>> = [];
  const start = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor((performance.now() - start) / interval) + 1);
    for (; sent < due; sent += 1) {
      const scheduled = start + sent * interval;
      const sentAt = performance.now();
      pending.push(
        call(sent).then(
          () => {
            const done = performance.now();
            fromSchedule.push(done - scheduled);
            fromSend.push(done - sentAt);
          },
          (error: unknown) => {
            failures += 1;
            if (failures === 1) console.log(`first failure: ${(error as Error).message}`);
          },
        ),
      );
    }
    // A 1 ms timer rather than a spin: the pacer must not eat the CPU that auth and Redis need.
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(pending);
  return { fromSchedule, fromSend, failures };
}

async function createKeys(auth: AuthServiceClient, count: number, plan: CreateKeyRequest['plan']): Promise<string[]> {
  const secrets: string[] = [];
  const calls = authCalls(auth, { deadlineMs: 5000 });
  for (let index = 0; index < count; index += 1) {
    const created = await calls.createKey({ plan, name: 'bench' });
    secrets.push(created.secret!);
  }
  return secrets;
}

export const suite: BenchSuite = {
  name: 'auth',
  description: "quota decision latency and CPU at 1,000 and 5,000 decisions/s (open loop), unary CheckKey vs Decide streams, and the edge's added latency",
  async run() {
    const cluster = await startCluster({ env: { CATALOG_PATH: CATALOG } });
    const grpc = loadGatewayGrpc().gateway;
    const auth = createClient(grpc.auth.v1.AuthService, `127.0.0.1:${cluster.ports.auth}`);
    const executor = createClient(grpc.executor.v1.ExecutorService, `127.0.0.1:${cluster.ports.executor}`);
    const redis = new Redis(cluster.redisUrl);
    try {
      // Many Pro tenants, as in production: 5,000/s over 500 keys is 600 requests/min per key,
      // under Pro's 1,000, so every decision is a full allow with a reservation.
      const secrets = await createKeys(auth, KEYS, 'PLAN_PRO');
      let unaryFallbacks = 0;
      const streamed = new StreamedCalls<{
        check_key: [CheckKeyRequest, CheckKeyResponseOutput];
        settle_usage: [SettleUsageRequest, SettleUsageResponseOutput];
      }>({
        open: () => auth.Decide(),
        streams: STREAMS,
        unary: {
          check_key: (request, options) => callUnary(auth, auth.CheckKey, request, options),
          settle_usage: (request, options) => callUnary(auth, auth.SettleUsage, request, options),
        },
        onCall: (_method, path) => {
          if (path === 'unary') unaryFallbacks += 1;
        },
      });
      while (streamed.openStreams < STREAMS) await new Promise((resolve) => setTimeout(resolve, 10));
      const options: CallOptions = { deadlineMs: 5000 };
      const calls = authCalls(auth, options);
      const checkRequest = (index: number): CheckKeyRequest => ({
        api_key: secrets[index % KEYS],
        request_id: 'bench',
        reserve_tokens: 50,
        reservation_id: randomUUID(),
      });
      const allowed = (decision: CheckKeyResponseOutput) => {
        if (decision.decision !== 'DECISION_ALLOW') throw new Error(decision.decision);
        return decision;
      };
      const paths = {
        unary: {
          check: (index: number) => calls.checkKey(checkRequest(index)).then(allowed),
          settle: calls.settleUsage,
        },
        stream: {
          check: (index: number) => streamed.call('check_key', checkRequest(index), options).then(allowed),
          settle: (request: SettleUsageRequest) => streamed.call('settle_usage', request, options),
        },
      };
      await openLoop(1000, 2, paths.unary.check);
      await openLoop(1000, 2, paths.stream.check);

      const scriptStats = async () => {
        const info = await redis.info('commandstats');
        const match = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(info);
        return match ? { calls: Number(match[1]), usec: Number(match[2]) } : { calls: 0, usec: 0 };
      };
      const before = await scriptStats();
      const rows: Array<Array<string | number>> = [];
      const authPid = cluster.processes.auth.pid!;
      /** Runs one open loop and adds its row: latencies, and each side's CPU per call. */
      const measure = async (label: string, rate: number, seconds: number, call: (index: number) => Promise<unknown>) => {
        const authCpuBefore = processCpuMs(authPid);
        const callerCpuBefore = process.cpuUsage();
        const { fromSchedule, fromSend, failures } = await openLoop(rate, seconds, call);
        const callerCpu = process.cpuUsage(callerCpuBefore);
        const calls = rate * seconds;
        const authCpuUs = ((processCpuMs(authPid) - authCpuBefore) * 1000) / calls;
        const service = summarize(fromSend);
        const waited = summarize(fromSchedule);
        rows.push([
          label,
          service.count,
          failures,
          fixed(service.p50, 3),
          fixed(service.p99, 3),
          fixed(waited.p50, 3),
          fixed(waited.p99, 3),
          fixed(authCpuUs, 0),
          fixed((callerCpu.user + callerCpu.system) / calls, 0),
        ]);
      };
      for (const rate of [1000, 5000]) {
        await measure(`CheckKey, unary, at ${rate}/s`, rate, SECONDS, paths.unary.check);
        await measure(`CheckKey on ${STREAMS} Decide streams, at ${rate}/s`, rate, SECONDS, paths.stream.check);
      }
      for (const [name, path] of [
        ['unary', paths.unary],
        [`on ${STREAMS} Decide streams`, paths.stream],
      ] as const) {
        const reservations: string[] = [];
        for (let index = 0; index < 2000; index += 1) reservations.push((await path.check(index)).reservation_id!);
        await measure(`SettleUsage, ${name}, at 1000/s`, 1000, 2, (index) =>
          path.settle({ reservation_id: reservations[index]!, actual_tokens: 20, request_id: 'bench' }),
        );
      }
      await streamed.close();

      const after = await scriptStats();
      // The floor of any Redis round trip from a Node process on this machine.
      const ping = summarize(await timeSequential(2000, 200, () => redis.ping()));
      console.log(
        `Open loop, ${SECONDS} s per rate, ${KEYS} Pro keys; latency in ms from each call's send, and from its scheduled start (queueing included):\n`,
      );
      table(
        ['call', 'answered', 'failed (5 s deadline)', 'p50', 'p99', 'p50 from schedule', 'p99 from schedule', 'auth CPU µs/call', 'caller CPU µs/call'],
        rows,
      );
      console.log(`\n(Calls that found no open stream and went unary: ${unaryFallbacks}. The caller's CPU includes the load generator's own.)`);
      console.log(
        `\n(Machine load average while measuring: ${loadavg()
          .map((value) => fixed(value, 1))
          .join(', ')} on ${cpus().length} cores.)`,
      );
      const scriptUs = after.calls > before.calls ? (after.usec - before.usec) / (after.calls - before.calls) : Number.NaN;
      console.log(`\nInside Redis, the scripts took ${fixed(scriptUs, 1)} µs per call on average (INFO commandstats, every client of this Redis).`);
      console.log(`A bare Redis PING from this process: p50 ${fixed(ping.p50, 3)} ms, p99 ${fixed(ping.p99, 3)} ms.`);

      // The edge's added latency with warm channels and a warm catalog (the edge caches no keys).
      const [metered] = await createKeys(auth, 1, 'PLAN_PRO');
      const [unlimited] = await createKeys(auth, 1, 'PLAN_ENTERPRISE');
      const body = JSON.stringify({ model: 'sim-bench', messages: [{ role: 'user', content: 'Say hello in five words.' }], seed: 1, max_tokens: 50 });
      const through = (secret: string) => async () => {
        const response = await fetch(`${cluster.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
          body,
        });
        if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`);
        await response.arrayBuffer();
      };
      const execute: ExecuteRequest = {
        request_id: 'bench',
        model_id: 'sim-bench',
        request: { model: 'sim-bench', messages: [{ role: 'ROLE_USER', text: 'Say hello in five words.' }], seed: 1, max_tokens: 50 },
      };
      const direct = summarize(
        await timeSequential(500, 100, () => callUnary<ExecuteRequest, ExecuteResponseOutput>(executor, executor.Complete, execute, { deadlineMs: 5000 })),
      );
      // Under a minute of 500 requests stays within Pro's 1,000 per minute.
      const withLimits = summarize(await timeSequential(400, 50, through(metered!)));
      const withoutLimits = summarize(await timeSequential(400, 50, through(unlimited!)));
      console.log('\nSequential requests through the edge, warm (ms):\n');
      table(
        ['path', 'p50', 'p99', 'mean', 'added over the executor at p50'],
        [
          ['executor over gRPC (the model alone)', fixed(direct.p50), fixed(direct.p99), fixed(direct.mean), '-'],
          [
            'edge, Pro key (limits, reservation, settlement)',
            fixed(withLimits.p50),
            fixed(withLimits.p99),
            fixed(withLimits.mean),
            fixed(withLimits.p50 - direct.p50),
          ],
          [
            'edge, Enterprise key (lookup only)',
            fixed(withoutLimits.p50),
            fixed(withoutLimits.p99),
            fixed(withoutLimits.mean),
            fixed(withoutLimits.p50 - direct.p50),
          ],
        ],
      );
      console.log(`\nThe limits' share of the edge's latency at p50: ${fixed(withLimits.p50 - withoutLimits.p50)} ms.`);
    } finally {
      auth.close();
      executor.close();
      await redis.quit();
      await cluster.stop();
    }
  },
};
