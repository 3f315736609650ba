import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, portRange, useLeases } from './processes.js';

const SOURCE = fileURLToPath(new URL('./processes.ts', import.meta.url));
const children: ChildProcess[] = [];

afterEach(async () => {
  await Promise.all(
    children.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }),
  );
});

/**
 * A process of its own that takes `count` ports at once (all allocations in flight together), prints
 * them as one JSON line and holds them until its stdin closes; or, with `lease`, leases the given
 * ports and prints which it got.
 */
async function allocator(kind: 'socket' | 'file', job: { count: number } | { lease: number[] }): Promise<{ child: ChildProcess; ports: Promise<number[]> }> {
  const work =
    'count' in job
      ? `await Promise.all(Array.from({ length: ${job.count} }, () => freePort()))`
      : `(await Promise.all(${JSON.stringify(job.lease)}.map(async (port) => ((await leasePort(port)) ? port : 0)))).filter((port) => port > 0)`;
  const script = `import { freePort, leasePort, useLeases } from ${JSON.stringify(SOURCE)};
useLeases(${JSON.stringify(kind)});
console.log(JSON.stringify(${work}));
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  let errors = '';
  child.stderr!.on('data', (data: Buffer) => {
    errors += data.toString();
  });
  const ports = new Promise<number[]>((resolve, reject) => {
    child.stdout!.on('data', (data: Buffer) => {
      output += data.toString();
      if (output.includes('\n')) resolve(JSON.parse(output.slice(0, output.indexOf('\n'))) as number[]);
    });
    child.once('exit', (code) => reject(new Error(`allocator exited with ${code} before printing its ports: ${errors}`)));
  });
  return { child, ports };
}

describe.each(['socket', 'file'] as const)('freePort with %s leases', (kind) => {
  it('never hands out one port twice among processes allocating at once, nor in the kernel ephemeral range', async () => {
    useLeases(kind);
    const started = await Promise.all(Array.from({ length: 6 }, () => allocator(kind, { count: 40 })));
    const [own, ...theirs] = await Promise.all([Promise.all(Array.from({ length: 40 }, () => freePort())), ...started.map(({ ports }) => ports)]);
    const all = [...own, ...theirs.flat()];
    expect(all).toHaveLength(7 * 40);
    expect(new Set(all).size).toBe(all.length);
    const { low, high } = portRange();
    for (const port of all) {
      expect(port).toBeGreaterThanOrEqual(low);
      expect(port).toBeLessThanOrEqual(high);
    }
    expect(high).toBeLessThan(32_768);
  });

  it('refuses a port another process holds, and hands it out again once that process is killed', async () => {
    useLeases(kind);
    const holder = await allocator(kind, { count: 20 });
    const held = await holder.ports;
    const whileHeld = await allocator(kind, { lease: held });
    expect(await whileHeld.ports).toEqual([]);
    const exited = once(holder.child, 'exit');
    holder.child.kill('SIGKILL');
    await exited;
    const afterKill = await allocator(kind, { lease: held });
    expect((await afterKill.ports).sort()).toEqual([...held].sort());
  });

  it('leases port + offset too, so another process never gets the companion as its own port', async () => {
    useLeases(kind);
    const ports = await Promise.all(Array.from({ length: 30 }, () => freePort({ companionOffset: 10_000 })));
    const companions = ports.map((port) => port + 10_000);
    expect(companions.every((port) => port <= portRange().high)).toBe(true);
    const other = await allocator(kind, { lease: companions });
    expect(await other.ports).toEqual([]);
  });
});
