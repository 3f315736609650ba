/**
 * The NATS users of the deployment (deploy/components/nats and nats-cluster: one user a service,
 * each allowed only its subjects) against a real nats-server running that config's authorization
 * block: each service does what it does at run time through this package (the edge and metering
 * make sure of the usage stream, the edge publishes usage, metering and the request log consume it,
 * the request log makes its side streams (refused, bodies, tool calls), the executor publishes
 * deployment health and the router reads it), connecting with its user and password in NATS_URL; and no service but metering can
 * delete or purge the usage stream, nor read another's consumer. And the cluster's servers speak
 * TLS (components/nats-cluster's `tls` block): a client trusting their CA through
 * NODE_EXTRA_CA_CERTS, as the deployment sets it, connects over tls://; one without it is refused.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@gateway/logger';
import { freePort, natsServerBinary, serverProcess, type ServerProcess } from '@gateway/testing';
import { type NatsConnection, StringCodec } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { bodiesNames } from './bodies-stream.js';
import { connectNats } from './connect-nats.js';
import { ensureDurableConsumer } from './durable-consumer.js';
import { refusedNames } from './refused-stream.js';
import { ensureSideStream, sideStreamLimits } from './side-stream.js';
import { toolCallNames } from './tool-calls-stream.js';
import { usageEvent } from './testing/usage-fixtures.js';
import { UsagePublisher } from './usage-publisher.js';
import { ensureUsageStream, USAGE_STREAM, USAGE_SUBJECT } from './usage-stream.js';

const root = join(import.meta.dirname, '..', '..', '..');
const binary = natsServerBinary();
const USERS = ['edge', 'metering', 'request-log', 'router', 'executor'] as const;
type User = (typeof USERS)[number];
const PASSWORDS = Object.fromEntries(USERS.map((user, index) => [user, `${index}f3a9c0d4e5b6a7f8${user.length}`])) as Record<User, string>;
const logger = createLogger('nats-users-test', 'silent');

/** The nats.conf of a component's ConfigMap. */
function natsConf(component: string, file: string): string {
  const documents = parseAllDocuments(readFileSync(join(root, 'deploy', 'components', component, file), 'utf8')).map((document) => document.toJS());
  const config = documents.find((object) => object?.kind === 'ConfigMap');
  return String(config.data['nats.conf']);
}

/** The authorization block of a nats.conf, to its closing brace at the start of a line. */
function authorizationOf(conf: string): string {
  const match = /^authorization \{[\s\S]*?^\}$/m.exec(conf);
  if (!match) throw new Error('no authorization block');
  return match[0];
}

let directory: string;
let server: ServerProcess;
let port: number;
const connections: NatsConnection[] = [];

/** A service's connection, as it makes it: its user and password in NATS_URL. */
async function connectAs(user: User, password = PASSWORDS[user]): Promise<NatsConnection> {
  const nc = await connectNats(`nats://${user}:${password}@127.0.0.1:${port}`, user, logger);
  connections.push(nc);
  return nc;
}

/** Resolves with the error a promise rejects with; fails when it resolves. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return String((error as Error).message ?? error);
  }
  throw new Error('allowed, but should have been refused');
}

describe.skipIf(!binary)('the deployment NATS users (nats-server on PATH)', () => {
  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'nats-users-'));
    port = await freePort();
    // The deployment's authorization block as it is, its passwords defined before it as the
    // container's environment would give them, on a loopback port with a store of its own.
    const definitions = USERS.map((user) => `NATS_${user.toUpperCase().replace('-', '_')}_PASSWORD: "${PASSWORDS[user]}"`).join('\n');
    const conf = `${definitions}\nlisten: 127.0.0.1:${port}\njetstream { store_dir: "${join(directory, 'store')}", max_file_store: 1GB, max_memory_store: 64MB }\n${authorizationOf(natsConf('nats', 'nats.yaml'))}\n`;
    writeFileSync(join(directory, 'nats.conf'), conf);
    server = serverProcess(binary as string, ['-c', join(directory, 'nats.conf')], port);
    await server.start();
  });

  afterAll(async () => {
    await Promise.all(connections.map((nc) => nc.close().catch(() => undefined)));
    await server?.kill('SIGTERM');
    rmSync(directory, { recursive: true, force: true });
  });

  it('is the same block in the single server and the cluster', () => {
    expect(authorizationOf(natsConf('nats-cluster', 'nats-cluster.yaml'))).toBe(authorizationOf(natsConf('nats', 'nats.yaml')));
  });

  it('refuses a wrong password', async () => {
    expect(await refusal(connectNats(`nats://edge:wrong@127.0.0.1:${port}`, 'edge', logger).then((nc) => connections.push(nc)))).toMatch(
      /Authorization Violation/i,
    );
  }, 30_000);

  it('lets each service do what it does, and nothing of the others', async () => {
    const [edge, metering, requestLog, router, executor] = await Promise.all(USERS.map((user) => connectAs(user)));
    const settings = { maxBytes: 64 * 1024 * 1024 };
    // The edge and metering make sure of the usage stream at start; the request log too.
    await ensureUsageStream(edge, settings);
    await ensureUsageStream(metering, settings);
    await ensureUsageStream(requestLog, settings);
    // The edge publishes usage as it does (its publisher, acknowledged by JetStream on its inbox);
    // metering's and the request log's consumers read it and acknowledge.
    const publisher = new UsagePublisher(edge, logger, { subject: USAGE_SUBJECT });
    publisher.publish(usageEvent('event-1'));
    await publisher.flush(30_000);
    publisher.close();
    expect((await (await metering.jetstreamManager()).streams.info(USAGE_STREAM)).state.messages).toBe(1);
    for (const [nc, durableName] of [
      [metering, 'metering'],
      [requestLog, 'request-log'],
    ] as const) {
      await ensureDurableConsumer(nc, { stream: USAGE_STREAM, durableName, filterSubject: USAGE_SUBJECT });
      const consumer = await nc.jetstream().consumers.get(USAGE_STREAM, durableName);
      const message = await consumer.next({ expires: 5_000 });
      expect(message?.subject).toBe(USAGE_SUBJECT);
      await message?.ackAck();
    }
    // Metering reads an event's time for its lag (consumer-lag.ts); the request log reads no event itself.
    expect((await (await metering.jetstreamManager()).streams.getMessage(USAGE_STREAM, { seq: 1 })).subject).toBe(USAGE_SUBJECT);
    expect(await refusal((await requestLog.jetstreamManager()).streams.getMessage(USAGE_STREAM, { seq: 1 }))).toMatch(/Permissions Violation/);
    // The request log makes its side streams; the edge publishes refusals, bodies and tool calls to them.
    for (const names of [refusedNames(), bodiesNames(), toolCallNames()]) {
      await ensureSideStream(requestLog, names, sideStreamLimits(8 * 1024 * 1024));
      await edge.jetstream().publish(names.subject, StringCodec().encode('side'));
      await ensureDurableConsumer(requestLog, { stream: names.stream, durableName: 'request-log', filterSubject: names.subject });
    }
    // The executors report deployment health; the router hears it.
    const heard = router.subscribe('health.v1.deployment', { max: 1 });
    await router.flush();
    executor.publish('health.v1.deployment', StringCodec().encode('healthy'));
    for await (const message of heard) expect(StringCodec().decode(message.data)).toBe('healthy');

    // Nobody but metering deletes or purges the usage stream; nobody reads another's consumer.
    for (const nc of [edge, requestLog]) {
      const manager = await nc.jetstreamManager();
      expect(await refusal(manager.streams.delete(USAGE_STREAM))).toMatch(/Permissions Violation/);
      expect(await refusal(manager.streams.purge(USAGE_STREAM))).toMatch(/Permissions Violation/);
    }
    expect(await refusal((await requestLog.jetstreamManager()).consumers.info(USAGE_STREAM, 'metering'))).toMatch(/Permissions Violation/);
    expect(await refusal((await edge.jetstreamManager()).streams.delete(refusedNames().stream))).toMatch(/Permissions Violation/);
    // The router and the executors have no JetStream at all, and publish nothing else.
    for (const nc of [router, executor]) expect(await refusal(nc.jetstreamManager())).toMatch(/Permissions Violation/);
    const usageNow = async () => (await (await metering.jetstreamManager()).streams.info(USAGE_STREAM)).state.messages;
    const before = await usageNow();
    executor.publish(USAGE_SUBJECT, StringCodec().encode('forged'));
    router.publish(USAGE_SUBJECT, StringCodec().encode('forged'));
    await Promise.all([executor.flush(), router.flush()]);
    // The edge's next event is stored after anything the stream took before it: only that one is new.
    await edge.jetstream().publish(USAGE_SUBJECT, StringCodec().encode('event'), { msgID: 'event-2' });
    expect(await usageNow()).toBe(before + 1);

    // Metering, the stream's owner, may delete it.
    expect(await (await metering.jetstreamManager()).streams.delete(USAGE_STREAM)).toBe(true);
  }, 60_000);
});

/** Whether openssl is here, to make a CA and a server certificate as cert-manager would. */
const hasOpenssl = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!binary || !hasOpenssl)('the cluster servers over TLS (nats-server and openssl on PATH)', () => {
  let tlsDirectory: string;
  let tlsServer: ServerProcess;
  let tlsPort: number;

  beforeAll(async () => {
    tlsDirectory = mkdtempSync(join(tmpdir(), 'nats-tls-'));
    const at = (file: string) => join(tlsDirectory, file);
    const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: tlsDirectory, stdio: 'ignore' });
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=gateway-nats-ca', '-days', '1');
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'tls.key', '-out', 'tls.csr', '-subj', '/CN=nats');
    writeFileSync(at('san.ext'), 'subjectAltName=DNS:localhost\n');
    openssl('x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'tls.crt', '-days', '1', '-extfile', 'san.ext');
    tlsPort = await freePort();
    // The cluster config's own tls block (its files where the test made them) and users, on one server.
    const conf = natsConf('nats-cluster', 'nats-cluster.yaml');
    const tls = /^tls \{[\s\S]*?^\}$/m.exec(conf)?.[0].replaceAll('/etc/nats-tls/', `${tlsDirectory}/`);
    if (!tls) throw new Error('nats-cluster.yaml has no top-level tls block');
    const definitions = USERS.map((user) => `NATS_${user.toUpperCase().replace('-', '_')}_PASSWORD: "${PASSWORDS[user]}"`).join('\n');
    writeFileSync(at('nats.conf'), `${definitions}\nlisten: 127.0.0.1:${tlsPort}\n${tls}\n${authorizationOf(conf)}\n`);
    tlsServer = serverProcess(binary as string, ['-c', at('nats.conf')], tlsPort);
    await tlsServer.start();
  });

  afterAll(async () => {
    await tlsServer?.kill('SIGTERM');
    rmSync(tlsDirectory, { recursive: true, force: true });
  });

  it('takes a client that trusts the CA through NODE_EXTRA_CA_CERTS, and refuses one that does not', () => {
    // A process of its own: Node.js reads NODE_EXTRA_CA_CERTS at start, as a service's does.
    const script = `import { connectNats } from ${JSON.stringify(join(import.meta.dirname, '..', 'dist', 'connect-nats.js'))};
const quiet = { info() {}, warn() {}, error() {} };
const nc = await connectNats('tls://metering:${PASSWORDS.metering}@localhost:${tlsPort}', 'metering', quiet);
console.log(JSON.stringify({ tls: nc.info?.tls_required === true }));
await nc.close();`;
    const trusted = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: join(tlsDirectory, 'ca.crt') },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(trusted.stderr).toBe('');
    expect(JSON.parse(trusted.stdout)).toEqual({ tls: true });
    // Without the CA the handshake fails (one attempt, not connectNats's endless reconnecting).
    const untrusted = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { connect } from 'nats';
try { await connect({ servers: 'tls://localhost:${tlsPort}', user: 'metering', pass: '${PASSWORDS.metering}', maxReconnectAttempts: 0 }); console.log('connected'); }
catch (error) { console.log(error.message); }`,
      ],
      { cwd: import.meta.dirname, encoding: 'utf8', timeout: 30_000 },
    );
    expect(untrusted.stdout).toMatch(/unable to verify|self.signed|certificate/i);
  }, 60_000);
});
