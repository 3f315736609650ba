/**
 * Where integration tests find Redis and NATS: REDIS_URL and NATS_URL when set (CI and the
 * project's scripts set them after making sure both answer), otherwise containers started with
 * testcontainers where a Docker engine exists. Without either, the test fails and says what to do.
 */
import { connect } from 'node:net';
import { freePort } from './processes.js';

const started: Array<{ stop(): Promise<unknown> }> = [];

function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.setTimeout(1000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A dependency a test needs: the variable naming its URL, and the container to start without one. */
interface Dependency {
  variable: string;
  image: string;
  port: number;
  args: string[];
  scheme: string;
}

async function fromEnvOrContainer({ variable, image, port, args, scheme }: Dependency): Promise<string> {
  const fromEnv = process.env[variable];
  if (fromEnv) return fromEnv;
  try {
    const { GenericContainer } = await import('testcontainers');
    const container = await new GenericContainer(image).withExposedPorts(port).withCommand(args).start();
    started.push(container);
    return `${scheme}://${container.getHost()}:${container.getMappedPort(port)}`;
  } catch (error) {
    throw new Error(
      `${variable} is not set and no container could be started (${(error as Error).message}). Run \`bash scripts/dependencies.sh\` to start local Redis and NATS, then export the URLs it prints.`,
    );
  }
}

/** The Redis URL for integration tests: one server, or a cluster's nodes (`redis-cluster://h:p,h:p`). */
export async function redisUrl(): Promise<string> {
  const url = await fromEnvOrContainer({
    variable: 'REDIS_URL',
    image: 'redis:7.4.2-alpine@sha256:02419de7eddf55aa5bcf49efb74e88fa8d931b4d77c07eff8a6b2144472b6952',
    port: 6379,
    args: ['redis-server', '--save', ''],
    scheme: 'redis',
  });
  const first = url.replace(/^(rediss?)-cluster:/, '$1:').split(',')[0]!;
  if (!(await reachable(first))) throw new Error(`Redis at ${url} does not answer`);
  return url;
}

/** The NATS URL (JetStream on) for integration tests: one server, or a cluster's, comma-separated. */
export async function natsUrl(): Promise<string> {
  const url = await fromEnvOrContainer({ variable: 'NATS_URL', image: 'nats:2.10.24-alpine', port: 4222, args: ['-js'], scheme: 'nats' });
  const [first] = natsServers(url);
  if (!first || !(await reachable(first))) throw new Error(`NATS at ${url} does not answer`);
  return url;
}

/**
 * The USAGE_STREAM_MAX_BYTES of the usage streams tests create (64 MiB): NATS reserves each
 * stream's max_bytes from its max_file_store, so tests side by side on one development NATS must
 * not each take the production default (1 GiB).
 */
export const TEST_USAGE_STREAM_MAX_BYTES = 64 * 1024 * 1024;

/** The servers of a NATS_URL, as nats.js's `servers` option takes them. */
export function natsServers(url: string): string[] {
  return url
    .split(',')
    .map((server) => server.trim())
    .filter((server) => server.length > 0);
}

/** Stops the containers this process started. */
export async function stopContainers(): Promise<void> {
  await Promise.all(started.splice(0).map((container) => container.stop()));
}

/** A TCP proxy on loopback; closing it cuts every connection through it. */
export interface TcpProxy {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Starts a TCP proxy to host:targetPort on `port` (0 for one of freePort's, reserved for this
 * process: starting the proxy again on it later never finds it taken). Closing it makes a
 * dependency (Redis, NATS) unreachable for the clients that go through it only, without stopping
 * the shared server; starting it again on the same port brings the dependency back. With
 * `passFromTarget`, the target's bytes reach the clients only while it says so (the clients' bytes
 * always pass): a dependency that takes requests and whose answers are lost.
 */
export async function startTcpProxy(port: number, host: string, targetPort: number, options: { passFromTarget?: () => boolean } = {}): Promise<TcpProxy> {
  const { createServer: createTcpServer, connect: connectTcp } = await import('node:net');
  const sockets = new Set<import('node:net').Socket>();
  const { passFromTarget } = options;
  const listenPort = port === 0 ? await freePort() : port;
  const server = createTcpServer((client) => {
    const upstream = connectTcp(targetPort, host);
    sockets.add(client).add(upstream);
    if (passFromTarget) {
      client.pipe(upstream);
      upstream.on('data', (chunk) => {
        if (passFromTarget()) client.write(chunk);
      });
    } else client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, '127.0.0.1', () => resolve());
  });
  let closed = false;
  return {
    port: listenPort,
    close: () =>
      new Promise<void>((resolve) => {
        if (closed) return resolve();
        closed = true;
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export { eventually } from './eventually.js';
export { rejectedWith, thrownBy } from './thrown-by.js';
export * from './nats-cluster.js';
export * from './redis-cluster.js';
export * from './redis-server.js';
export { freePort, serverProcess, type ServerProcess } from './processes.js';
export * from './fake-upstream.js';
export * from './fake-bedrock.js';
export * from './dns-server.js';
export * from './fake-azure.js';
export * from './fake-google-cloud.js';
export * from './fake-embeddings.js';
export * from './postgres.js';
export * from './fixtures.js';
export * from './catalog-models.js';
export * from './hostile-requests.js';
export * from './stream-leader.js';
export * from './config-map-volume.js';
export * from './child-output.js';
export * from './oauth-metadata.js';
export * from './tls-postgres.js';
export * from './pgbouncer.js';
export * from './seeded-random.js';
