/** What the clusters the tests start share: free loopback ports, and waiting for a server to listen. */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';

const handedOut = new Set<number>();

// Ports are handed out below the kernel's ephemeral range (32768-60999 by default on Linux), so a
// port chosen here is never taken meanwhile by an outgoing connection's local port, and each
// vitest worker (VITEST_POOL_ID) draws from a block of its own, so test files run side by side
// never hand out the same port. A process outside vitest draws from block 0.
const PORT_BLOCK_SIZE = 2_000;
const PORT_BLOCKS_START = 12_000;
const PORT_BLOCKS = 10;
const block = Number(process.env.VITEST_POOL_ID ?? 0) % PORT_BLOCKS;
const blockStart = PORT_BLOCKS_START + block * PORT_BLOCK_SIZE;
let nextInBlock = Math.floor(Math.random() * PORT_BLOCK_SIZE);

/**
 * Moves this worker's next port to a random place in its block: after a port found free was taken
 * before its server bound it, the ports next in line are as likely to be contended.
 */
export function skipPorts(): void {
  nextInBlock += 1 + Math.floor(Math.random() * (PORT_BLOCK_SIZE - 1));
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
 * A TCP port free on every address right now, never one this process handed out before (a server
 * started with the one before may not listen yet), from this worker's own block of ports.
 */
export async function freePort(): Promise<number> {
  for (let tried = 0; tried < PORT_BLOCK_SIZE; tried++) {
    const port = blockStart + (nextInBlock++ % PORT_BLOCK_SIZE);
    if (handedOut.has(port)) continue;
    if (await canListen(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port left in ${blockStart}-${blockStart + PORT_BLOCK_SIZE - 1}`);
}

/** Resolves once `port` accepts connections; rejects if the process exits first, or after 10 s. */
export async function listening(child: ChildProcess, port: number, output: () => string, name: string): Promise<void> {
  const deadline = Date.now() + 10_000;
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
