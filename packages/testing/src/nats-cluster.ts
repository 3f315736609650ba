/**
 * A NATS cluster with JetStream on loopback, started and stopped by the test itself: `nats-server`
 * processes (Debian's package `nats-server`) joined by routes, each with its own store directory,
 * so that a test can kill a node and start it again on the same data. Each bounds JetStream's
 * storage as the deployed servers do (max_file_store, max_memory_store).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from './eventually.js';
import { freePort, serverProcess, type ServerProcess } from './processes.js';

/** The `nats-server` binary: on the PATH, or in an sbin folder (where Debian puts it). */
export function natsServerBinary(): string | undefined {
  for (const candidate of ['nats-server', '/usr/sbin/nats-server', '/usr/local/sbin/nats-server', '/usr/local/bin/nats-server']) {
    if (spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  return undefined;
}

/** Whether a `nats-server` binary is installed. */
export function hasNatsServer(): boolean {
  return natsServerBinary() !== undefined;
}

/** One node of a NatsCluster. */
export interface NatsNode extends ServerProcess {
  /** `server_name`, as JetStream names a stream's leader and replicas. */
  readonly name: string;
  /** `nats://127.0.0.1:<port>` of its client port. */
  readonly url: string;
  /** Deletes its JetStream store (while it is down): a server replaced with an empty disk. */
  wipeStore(): void;
}

/** A started cluster. */
export interface NatsCluster {
  readonly nodes: readonly NatsNode[];
  /** Every node's client URL, comma-separated: what NATS_URL takes for a cluster. */
  readonly url: string;
  /** The node of a server_name. */
  node(name: string): NatsNode;
  stop(): Promise<void>;
}

/**
 * Starts `size` nodes (3 by default) with JetStream, routed to one another, and resolves once each
 * listens. JetStream elects its meta leader shortly after: a first stream request may need retries
 * (see waitForJetStream).
 */
export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const binary = natsServerBinary();
  if (!binary) throw new Error('nats-server is not installed: apt-get install nats-server');
  const directory = mkdtempSync(join(tmpdir(), 'nats-cluster-'));
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), route: await freePort() })));
  const nodes = ports.map((port, index) => {
    const name = `n${index + 1}`;
    const config = join(directory, `${name}.conf`);
    const store = join(directory, name);
    const routes = ports.filter((_, other) => other !== index).map((other) => `nats-route://127.0.0.1:${other.route}`);
    writeFileSync(
      config,
      `server_name: ${name}
listen: 127.0.0.1:${port.client}
jetstream { store_dir: "${store}", max_file_store: 8GB, max_memory_store: 256MB }
cluster {
  name: gateway-test
  listen: 127.0.0.1:${port.route}
  routes: [${routes.join(', ')}]
}
`,
    );
    const server = serverProcess(binary, ['-c', config], port.client);
    const node: NatsNode = {
      name,
      url: `nats://127.0.0.1:${port.client}`,
      get running() {
        return server.running;
      },
      kill: (signal) => server.kill(signal),
      start: () => server.start(),
      wipeStore() {
        if (node.running) throw new Error(`${name} is running: kill it before wiping its store`);
        rmSync(store, { recursive: true, force: true });
      },
    };
    return node;
  });
  const cluster: NatsCluster = {
    nodes,
    url: nodes.map((node) => node.url).join(','),
    node(name) {
      const found = nodes.find((node) => node.name === name);
      if (!found) throw new Error(`no node named ${name}`);
      return found;
    },
    async stop() {
      await Promise.all(nodes.map((node) => node.kill('SIGTERM')));
      rmSync(directory, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(nodes.map((node) => node.start()));
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

/** What waitForJetStream needs of a NATS connection; nats.js's NatsConnection has it. */
export interface JetStreamConnection {
  jetstreamManager(): Promise<{ getAccountInfo(): Promise<unknown> }>;
}

/**
 * Resolves once JetStream answers on the connection, rejects after `timeoutMs`: a cluster elects
 * its meta leader a moment after its servers start, and refuses stream requests until then.
 */
export async function waitForJetStream(connection: JetStreamConnection, timeoutMs = 30_000): Promise<void> {
  await eventually(
    async () =>
      (await connection
        .jetstreamManager()
        .then((manager) => manager.getAccountInfo())
        .catch(() => undefined))
        ? true
        : undefined,
    'JetStream to be ready on the cluster',
    timeoutMs,
    250,
  );
}
