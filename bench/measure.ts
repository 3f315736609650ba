/** Small measuring tools shared by the suites. */
import { readFileSync } from 'node:fs';

/** Percentile of sorted numbers. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

/** p50, p99 and mean of a list of milliseconds. */
export function summarize(samples: number[]): { p50: number; p99: number; mean: number; count: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), mean: sorted.reduce((a, b) => a + b, 0) / sorted.length, count: sorted.length };
}

/** Runs an async function sequentially `count` times after `warmup` runs; returns each run's ms. */
export async function timeSequential(count: number, warmup: number, task: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < warmup; i += 1) await task();
  const samples: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const start = performance.now();
    await task();
    samples.push(performance.now() - start);
  }
  return samples;
}

const TICKS_PER_SECOND = 100;

/** CPU time (user + system) a process has used so far, in ms, read from /proc. */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/** CPU ms (from /proc) each named process has used so far. */
export function cpuOf(pids: Partial<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, processCpuMs(pid!)]));
}

/**
 * CPU ms each named process used since `before` (from cpuOf), read once the processes have gone
 * quiet (metering handles usage events after their answers left): until a 300 ms window adds less
 * than 1% of a core per process, at most 10 s.
 */
export async function cpuSince(pids: Partial<Record<string, number>>, before: Record<string, number>): Promise<Record<string, number>> {
  let last = cpuOf(pids);
  for (let waited = 0; waited < 10_000; waited += 300) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = cpuOf(pids);
    const moved = Object.keys(now).reduce((sum, name) => sum + now[name]! - last[name]!, 0);
    last = now;
    if (moved < 3 * Object.keys(now).length) break;
  }
  return Object.fromEntries(Object.keys(last).map((name) => [name, last[name]! - before[name]!]));
}

/** Resident memory of a process in MiB, from /proc. */
export function processRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** Formats a number with a fixed count of decimals. */
export function fixed(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

/** Prints a markdown table. */
export function table(header: string[], rows: Array<Array<string | number>>): void {
  console.log(`| ${header.join(' | ')} |`);
  console.log(`| ${header.map(() => '---').join(' | ')} |`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

/**
 * The value of a `--name=<n>` flag of the command line, a positive number (with `integer`, a
 * positive integer); undefined when the flag is not given.
 */
export function numberFlag(name: string, options: { integer?: boolean } = {}): number | undefined {
  const argument = process.argv.find((candidate) => candidate.startsWith(`--${name}=`));
  if (!argument) return undefined;
  const text = argument.slice(name.length + 3);
  const value = Number(text);
  if (!(options.integer ? Number.isSafeInteger(value) : Number.isFinite(value)) || value <= 0)
    throw new Error(`--${name} takes a positive ${options.integer ? 'integer' : 'number'}, not ${text}`);
  return value;
}
