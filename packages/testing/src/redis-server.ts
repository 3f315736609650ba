/**
 * One Redis server on loopback, started and stopped by the test itself (Debian's package
 * `redis-server`), with the options the test gives (a maxmemory, a policy, a renamed command):
 * what a drill needs that must never change the shared Redis's configuration.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, serverProcess } from './processes.js';
import { hasRedisServer } from './redis-cluster.js';

/** A started Redis server of a test's own. */
export interface RedisServer {
  readonly port: number;
  /** `redis://127.0.0.1:<port>`: what REDIS_URL takes. */
  readonly url: string;
  /** Runs a redis-cli command against it (CONFIG SET maxmemory, INFO memory); returns its output, trimmed. */
  cli(...args: string[]): string;
  /**
   * An outage: stops the server (SIGTERM) and resolves once it exited, keeping its port and folder
   * for `resume`. Its data goes with it (no persistence): it comes back empty.
   */
  pause(): Promise<void>;
  /** Starts it again after `pause`, on the same port and flags; resolves once it listens. */
  resume(): Promise<void>;
  /** Stops it for good and removes its folder. */
  stop(): Promise<void>;
}

/** Starts a Redis server with `options` (redis-server's flags, e.g. `--maxmemory-policy allkeys-lru`). */
export async function startRedisServer(options: string[] = []): Promise<RedisServer> {
  if (!hasRedisServer()) throw new Error('redis-server is not installed: apt-get install redis-server (it brings redis-cli)');
  const port = await freePort();
  const directory = mkdtempSync(join(tmpdir(), 'redis-server-'));
  const server = serverProcess(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', directory, '--save', '', '--appendonly', 'no', ...options],
    port,
  );
  await server.start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    cli(...args) {
      const result = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 });
      if (result.status !== 0) throw new Error(`redis-cli -p ${port} ${args.join(' ')}: ${result.stderr || result.stdout}`);
      return result.stdout.trim();
    },
    pause: () => server.kill('SIGTERM'),
    async resume() {
      if (!server.running) await server.start();
    },
    async stop() {
      await server.kill('SIGTERM');
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
