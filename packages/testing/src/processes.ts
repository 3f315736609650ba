/** What the clusters the tests start share: free loopback ports, and waiting for a server to listen. */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';

const handedOut = new Set<number>();

/**
 * A TCP port free on loopback right now, never one this process handed out before (a server
 * started with the one before may not listen yet).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port: chosen } = server.address() as { port: number };
        server.close(() => resolve(chosen));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
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
