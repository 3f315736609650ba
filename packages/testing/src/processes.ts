/**
 * What the clusters the tests start share: loopback ports reserved for the life of the process,
 * and waiting for a server to listen.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A port handed out here is leased machine-wide for the life of this process: no other process
// using this module (another vitest worker, another project running beside, a second test run on
// the same machine, scripts/check-image.mjs beside the tests) hands it out while the lease is held,
// and the lease is checked before the port is probed, so a port is never "found free" between the
// probe of one process and the bind of another's server. The bind probe stays, for programs that
// take no lease (a server left running by a killed run, anything else on the machine).
//
// On Linux a lease is a Unix socket in the abstract namespace (`\0gateway-test-port/<port>`),
// listening and unreferenced: binding a name is exclusive within the network namespace (the same
// scope as the TCP port it stands for), and the kernel drops it when the process ends, however it
// ends (a SIGKILL'd worker's leases do not outlive it, and no pid can be mistaken for another's).
// Elsewhere a lease is a file created with O_EXCL under <tmpdir>/gateway-test-ports/<port> holding
// the owner's pid, removed at exit; a lease whose pid no longer runs is taken over.
//
// Ports are drawn at random below the kernel's ephemeral range (read from
// /proc/sys/net/ipv4/ip_local_port_range; 32768-60999 by default), so a port handed out here is
// never taken meanwhile by an outgoing connection's local port or by a server that listens on 0.
const LOWEST_PORT = 12_000;
const DEFAULT_EPHEMERAL = { low: 32_768, high: 60_999 };
const leases = new Map<number, Server | string>();
let releasesFilesAtExit = false;

/** The ports this module hands out: [low, high], outside the kernel's ephemeral range. */
export function portRange(): { low: number; high: number } {
  let ephemeral = DEFAULT_EPHEMERAL;
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low && high) ephemeral = { low, high };
  } catch {
    // Not Linux: the default range stands.
  }
  if (ephemeral.low - LOWEST_PORT >= 4_000) return { low: LOWEST_PORT, high: ephemeral.low - 1 };
  // An ephemeral range that starts low (some tuned machines begin it at 1024): the ports above it.
  if (65_535 - ephemeral.high >= 4_000) return { low: ephemeral.high + 1, high: 65_535 };
  throw new Error(`the kernel's ephemeral port range ${ephemeral.low}-${ephemeral.high} leaves no room for test ports`);
}

const leaseDirectory = join(tmpdir(), 'gateway-test-ports');

function pidRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function leaseFile(port: number): boolean {
  const path = join(leaseDirectory, String(port));
  mkdirSync(leaseDirectory, { recursive: true, mode: 0o1777 });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const descriptor = openSync(path, 'wx');
      writeSync(descriptor, `${process.pid}\n`);
      closeSync(descriptor);
      if (!releasesFilesAtExit) process.once('exit', releaseFiles);
      releasesFilesAtExit = true;
      leases.set(port, path);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let owner = Number.NaN;
      try {
        owner = Number.parseInt(readFileSync(path, 'utf8'), 10);
      } catch {
        // Released meanwhile: try again.
      }
      if (Number.isInteger(owner) && pidRuns(owner)) return false;
      try {
        unlinkSync(path);
      } catch {
        // Taken over by another process meanwhile: its O_EXCL won, ours fails below.
      }
    }
  }
  return false;
}

function releaseFiles(): void {
  for (const lease of leases.values()) {
    if (typeof lease !== 'string') continue;
    try {
      unlinkSync(lease);
    } catch {
      // Already gone.
    }
  }
}

function leaseSocket(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(`\0gateway-test-port/${port}`, () => {
      server.unref();
      leases.set(port, server);
      resolve(true);
    });
  });
}

let mechanism: 'socket' | 'file' = process.platform === 'linux' ? 'socket' : 'file';

/** Chooses how this process leases ports from now on (its tests check both on Linux). */
export function useLeases(kind: 'socket' | 'file'): void {
  mechanism = kind;
}

/**
 * Takes the machine-wide lease of `port` for the life of this process; false when another
 * process (or this one) holds it. freePort takes leases itself; this is for a test of them.
 */
export function leasePort(port: number): Promise<boolean> {
  if (leases.has(port)) return Promise.resolve(false);
  return mechanism === 'socket' ? leaseSocket(port) : Promise.resolve(leaseFile(port));
}

/** Gives a lease back (when the port turned out to be in use by a program that takes none). */
function release(port: number): void {
  const held = leases.get(port);
  leases.delete(port);
  if (held === undefined) return;
  if (typeof held === 'string') {
    try {
      unlinkSync(held);
    } catch {
      // Already gone.
    }
  } else held.close();
}

/** Whether nothing listens on `port`, on any address. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port reserved for this process until it exits: leased machine-wide (see above), and free
 * on every address when handed out. With `companionOffset`, `port + companionOffset` is leased and
 * free as well (Redis Cluster's bus port is its port + 10000).
 */
export async function freePort(options: { companionOffset?: number } = {}): Promise<number> {
  const { low, high } = portRange();
  const offset = options.companionOffset ?? 0;
  const top = high - offset;
  if (top < low) throw new Error(`no room for a port and its companion ${offset} above it in ${low}-${high}`);
  for (let tried = 0; tried < 1_000; tried++) {
    const port = low + Math.floor(Math.random() * (top - low + 1));
    if (!(await leasePort(port))) continue;
    if (offset > 0 && !(await leasePort(port + offset))) {
      release(port);
      continue;
    }
    if ((await canListen(port)) && (offset === 0 || (await canListen(port + offset)))) return port;
    // In use by a program that takes no lease: keep the lease (the port is no better for anyone
    // else using this module) but look elsewhere.
  }
  throw new Error(`no free port found in ${low}-${high} after 1000 tries`);
}

/**
 * Resolves once `port` accepts connections; rejects if the process exits first, or after 60 s (a
 * bound for a server that never listens, generous for a machine loaded by test runs beside).
 */
export async function listening(child: ChildProcess, port: number, output: () => string, name: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${output()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${name} did not listen on ${port}: ${output()}`);
}

/** A server process a test can crash and start again on the same port and files. */
export interface ServerProcess {
  /** Whether its process runs. */
  readonly running: boolean;
  /** Kills the process (SIGKILL by default: a crash) and resolves once it exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it (again), and resolves once it listens on its port. */
  start(): Promise<void>;
}

/** A ServerProcess of `binary args`, listening on `port`; not started yet. */
export function serverProcess(binary: string, args: string[], port: number): ServerProcess {
  let child: ChildProcess | undefined;
  return {
    get running() {
      return child !== undefined && child.exitCode === null && child.signalCode === null;
    },
    async kill(signal = 'SIGKILL') {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill(signal);
      await exited;
    },
    async start() {
      let output = '';
      child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout!.on('data', (data: Buffer) => {
        output = (output + data.toString()).slice(-4_000);
      });
      child.stderr!.on('data', (data: Buffer) => {
        output = (output + data.toString()).slice(-4_000);
      });
      await listening(child, port, () => output, binary);
    },
  };
}
