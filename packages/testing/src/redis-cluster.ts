/**
 * A Redis Cluster on loopback, started and stopped by the test itself: `redis-server` processes in
 * cluster mode (Debian's package `redis-server`), three masters with a replica each by default,
 * joined with `redis-cli --cluster create`, each with its own folder so that a test can kill a
 * master, watch its replica take over, and start the old master again (it rejoins as a replica).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, serverProcess, type ServerProcess } from './processes.js';

/** Whether `redis-server` and `redis-cli` are installed. */
export function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0 && spawnSync('redis-cli', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** One node of a RedisCluster; start() starts it again on the same port and folder (its cluster config is kept). */
export interface RedisNode extends ServerProcess {
  readonly port: number;
  /** `127.0.0.1:<port>`. */
  readonly address: string;
  /** Runs a redis-cli command against this node; returns its output, trimmed. */
  cli(...args: string[]): string;
}

/** A started cluster. */
export interface RedisCluster {
  readonly nodes: readonly RedisNode[];
  /** `redis-cluster://` and every node: what REDIS_URL takes for a cluster. */
  readonly url: string;
  /** The node that serves a key's slot as master now (as a running node sees it). */
  masterOf(key: string): RedisNode;
  /** Resolves once every running node reports the cluster ok, every slot has a running master, and every running replica is in sync with its master. */
  healthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

function cli(port: number, args: string[]): string {
  const result = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 });
  if (result.status !== 0) throw new Error(`redis-cli -p ${port} ${args.join(' ')}: ${result.stderr || result.stdout}`);
  return result.stdout.trim();
}

/**
 * Starts `masters` masters (3 by default) with `replicas` replicas each (1 by default) and
 * resolves once the cluster is ok. The node timeout is one second, so a killed master's replica
 * takes over within a few seconds.
 */
export async function startRedisCluster(options: { masters?: number; replicas?: number } = {}): Promise<RedisCluster> {
  if (!hasRedisServer()) throw new Error('redis-server is not installed: apt-get install redis-server (it brings redis-cli)');
  const masters = options.masters ?? 3;
  const replicas = options.replicas ?? 1;
  const directory = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
  const ports: number[] = [];
  // Each node's cluster bus listens on its port + 10000: both are reserved.
  for (let index = 0; index < masters * (1 + replicas); index += 1) ports.push(await freePort({ companionOffset: 10_000 }));
  const nodes = ports.map((port) => {
    const folder = join(directory, String(port));
    mkdirSync(folder);
    const server = serverProcess(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        folder,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        '1000',
        // The slots of other masters keep serving while one master's are failing over.
        '--cluster-require-full-coverage',
        'no',
        // A replica takes over however long it was cut off from its master.
        '--cluster-replica-validity-factor',
        '0',
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      port,
    );
    const node: RedisNode = {
      port,
      address: `127.0.0.1:${port}`,
      get running() {
        return server.running;
      },
      kill: (signal) => server.kill(signal),
      start: () => server.start(),
      cli: (...args) => cli(port, args),
    };
    return node;
  });

  const running = () => nodes.filter((node) => node.running);
  const cluster: RedisCluster = {
    nodes,
    url: `redis-cluster://${nodes.map((node) => node.address).join(',')}`,
    masterOf(key) {
      const observer = running()[0];
      if (!observer) throw new Error('no node of the cluster runs');
      const slot = Number(observer.cli('CLUSTER', 'KEYSLOT', key));
      // CLUSTER NODES: <id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <state> <slots...>
      for (const line of observer.cli('CLUSTER', 'NODES').split('\n')) {
        const [, address, flags, , , , , , ...ranges] = line.split(' ');
        if (!flags?.includes('master') || flags.includes('fail')) continue;
        for (const range of ranges) {
          const [low, high] = range.split('-').map(Number);
          if (slot >= low! && slot <= (high ?? low)!) {
            const port = Number(address!.split('@')[0]!.split(':')[1]);
            const found = nodes.find((node) => node.port === port);
            if (found) return found;
          }
        }
      }
      throw new Error(`no master serves slot ${slot}`);
    },
    async healthy(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        let ok = false;
        try {
          ok =
            running().every((node) => node.cli('CLUSTER', 'INFO').includes('cluster_state:ok')) &&
            running().every((node) => node.cli('CLUSTER', 'INFO').includes('cluster_slots_ok:16384')) &&
            // Every replica has its master's data: a replica still in its first sync holds nothing,
            // and a failover to it would lose every key of its slots, not only the writes in flight.
            running().every((node) => {
              const replication = node.cli('INFO', 'replication');
              return (
                !replication.includes('role:slave') || (replication.includes('master_link_status:up') && replication.includes('master_sync_in_progress:0'))
              );
            });
        } catch {
          ok = false;
        }
        if (ok) return;
        if (Date.now() > deadline) throw new Error('the Redis cluster did not become healthy');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
    async stop() {
      await Promise.all(nodes.map((node) => node.kill('SIGTERM')));
      rmSync(directory, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(nodes.map((node) => node.start()));
    const created = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((node) => node.address), '--cluster-replicas', String(replicas), '--cluster-yes'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    await cluster.healthy();
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}
