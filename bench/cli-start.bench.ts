/**
 * How fast auth's CLI (services/auth/dist/cli/cli.js) starts and ends: its usage (`--help`, nothing
 * but the command line), a refused command line, and commands on Redis (`list`, and `get` of a key
 * created first), each beside `node -e 0` (Node's own start) in alternating rounds, as wall time
 * and CPU time (the child's user + system, from /proc, in 10 ms ticks) per run. Scripts and tests
 * start the CLI many times over: the target is under 300 ms a command where `node -e 0` takes about
 * 40 ms, held as ratios of the median CPU time to `node -e 0`'s in the same run (the work the CLI
 * does, which its imports decide; wall time on a shared machine mostly measures the others' load):
 * the usage within 3 times, a command on Redis within 7 times. A missed target is flagged and makes
 * `pnpm bench` exit non-zero.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connectRedis, deleteMatching } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';
import { fixed, summarize, table } from './measure.js';
import type { BenchSuite } from './run.js';

const CLI = fileURLToPath(new URL('../services/auth/dist/cli/cli.js', import.meta.url));
const ROUNDS = 15;
/** Most CPU the usage may take, in starts of `node -e 0`: it loads only the command line's parser. */
const USAGE_RATIO = 3;
/** Most CPU a command on Redis may take, in starts of `node -e 0`: 300 ms over about 40 ms, rounded down. */
const COMMAND_RATIO = 7;

/** The CPU time this process's waited-for children have used so far, in ms, from /proc. */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
}

/** One run of node with `args`: wall and CPU ms; throws when it exits otherwise than `expectedCode`. */
function runNode(args: string[], env: NodeJS.ProcessEnv, expectedCode = 0): { wall: number; cpu: number } {
  const cpuBefore = childrenCpuMs();
  const start = performance.now();
  const result = spawnSync(process.execPath, args, { env, encoding: 'utf8' });
  const wall = performance.now() - start;
  if (result.status !== expectedCode) throw new Error(`node ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return { wall, cpu: childrenCpuMs() - cpuBefore };
}

export const suite: BenchSuite = {
  name: 'cli-start',
  description: "auth's CLI from start to exit, beside `node -e 0`",
  async run() {
    const url = await redisUrl();
    const prefix = `bench-${randomUUID()}:auth:`;
    const env = { ...process.env, REDIS_URL: url, AUTH_REDIS_PREFIX: prefix };
    const created = spawnSync(process.execPath, [CLI, 'create-key', '--plan', 'pro', '--json'], { env, encoding: 'utf8' });
    if (created.status !== 0) throw new Error(`create-key failed: ${created.stderr}`);
    const keyId = (JSON.parse(created.stdout) as { key_id: string }).key_id;
    const cases: Array<{ name: string; args: string[]; code?: number; target?: number }> = [
      { name: '`node -e 0`', args: ['-e', '0'] },
      { name: '`cli.js --help`', args: [CLI, '--help'], target: USAGE_RATIO },
      { name: '`cli.js frobnicate` (refused, exit 2)', args: [CLI, 'frobnicate'], code: 2, target: USAGE_RATIO },
      { name: '`cli.js list` (Redis)', args: [CLI, 'list'], target: COMMAND_RATIO },
      { name: '`cli.js get KEY_ID` (Redis)', args: [CLI, 'get', keyId], target: COMMAND_RATIO },
    ];
    const samples = cases.map(() => ({ wall: [] as number[], cpu: [] as number[] }));
    try {
      for (let round = 0; round < ROUNDS + 2; round += 1) {
        cases.forEach((entry, index) => {
          const { wall, cpu } = runNode(entry.args, env, entry.code);
          // The first two rounds warm the file cache.
          if (round < 2) return;
          samples[index]!.wall.push(wall);
          samples[index]!.cpu.push(cpu);
        });
      }
    } finally {
      const redis = connectRedis(url);
      await deleteMatching(redis, `${prefix}*`);
      await redis.quit();
    }
    const best = (values: number[]) => Math.min(...values);
    const median = (values: number[]) => summarize(values).p50;
    const baseline = samples[0]!;
    let missedAny = false;
    const rows = cases.map((entry, index) => {
      const { wall, cpu } = samples[index]!;
      const ratio = median(cpu) / median(baseline.cpu);
      const missed = entry.target !== undefined && ratio > entry.target;
      missedAny ||= missed;
      return [
        entry.name,
        fixed(best(wall), 0),
        fixed(median(wall), 0),
        fixed(median(cpu), 0),
        fixed(ratio),
        fixed(best(wall) / best(baseline.wall)),
        entry.target === undefined ? '' : `≤ ${entry.target}`,
        entry.target === undefined ? '' : missed ? '**MISSED**' : 'ok',
      ];
    });
    console.log(`${ROUNDS} rounds; wall ms (best, median) and CPU ms (median) of each run:\n`);
    table(['run', 'wall best ms', 'wall p50 ms', 'CPU p50 ms', 'CPU ×`node -e 0`', 'wall best ×`node -e 0`', 'target (CPU)', 'verdict'], rows);
    if (missedAny) {
      console.log('\nA target was missed (see **MISSED** above).');
      process.exitCode = 1;
    }
  },
};
