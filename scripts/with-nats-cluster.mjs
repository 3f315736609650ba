// Runs a command against a three-node NATS cluster with JetStream started on loopback for it
// (@gateway/testing's startNatsCluster: Debian's nats-server, a store per node), with NATS_URL set
// to the three servers and USAGE_STREAM_REPLICAS=3, then stops the cluster. scripts/test.sh runs
// the suites that carry usage events through it, so they pass against clustered JetStream as well
// as against one server.
//
//   node scripts/with-nats-cluster.mjs <command> [args...]     exit code: the command's
import { spawnSync } from 'node:child_process';
import { connect } from 'nats';
import { eventually, hasNatsServer, startNatsCluster } from '@gateway/testing';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('usage: node scripts/with-nats-cluster.mjs <command> [args...]');
  process.exit(2);
}
if (!hasNatsServer()) {
  console.error('nats-server is not installed: apt-get install nats-server');
  process.exit(1);
}
const cluster = await startNatsCluster(3);
let status = 1;
try {
  // JetStream elects its meta leader a moment after the servers start.
  const probe = await connect({ servers: cluster.nodes.map((node) => node.url) });
  await eventually(async () => ((await probe.jetstreamManager().then((manager) => manager.getAccountInfo()).catch(() => undefined)) ? true : undefined), 'JetStream to be ready on the cluster', 30_000, 250);
  await probe.close();
  console.log(`NATS cluster with JetStream: ${cluster.url}`);
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, NATS_URL: cluster.url, USAGE_STREAM_REPLICAS: '3' } });
  status = result.status ?? 1;
} finally {
  await cluster.stop();
}
process.exit(status);
