// Runs a command against clusters started on loopback for it, then stops them:
//   a three-node NATS cluster with JetStream (@gateway/testing's startNatsCluster: Debian's
//   nats-server, a store per node), with NATS_URL set to the three servers and
//   USAGE_STREAM_REPLICAS=3;
//   a Redis Cluster of three masters with a replica each (startRedisCluster: Debian's
//   redis-server in cluster mode), with REDIS_URL=redis-cluster://... and REDIS_WAIT_REPLICAS=1.
// scripts/test.sh runs the suites that touch Redis or carry usage events through it, so they pass
// against clusters as well as against single servers.
//
//   node scripts/with-clusters.mjs [--nats] [--redis] <command> [args...]    (both when neither)
//   exit code: the command's
import { spawnSync } from 'node:child_process';
import { connect } from 'nats';
import { hasNatsServer, hasRedisServer, startNatsCluster, startRedisCluster, waitForJetStream } from '@gateway/testing';

const argv = process.argv.slice(2);
const flags = new Set();
while (argv[0] === '--nats' || argv[0] === '--redis') flags.add(argv.shift());
const [command, ...args] = argv;
if (!command) {
  console.error('usage: node scripts/with-clusters.mjs [--nats] [--redis] <command> [args...]');
  process.exit(2);
}
const withNats = flags.size === 0 || flags.has('--nats');
const withRedis = flags.size === 0 || flags.has('--redis');
if (withNats && !hasNatsServer()) {
  console.error('nats-server is not installed: apt-get install nats-server');
  process.exit(1);
}
if (withRedis && !hasRedisServer()) {
  console.error('redis-server is not installed: apt-get install redis-server');
  process.exit(1);
}

const env = { ...process.env };
const stops = [];
let status = 1;
try {
  if (withNats) {
    const nats = await startNatsCluster(3);
    stops.push(() => nats.stop());
    // JetStream elects its meta leader a moment after the servers start.
    const probe = await connect({ servers: nats.nodes.map((node) => node.url) });
    await waitForJetStream(probe);
    await probe.close();
    console.log(`NATS cluster with JetStream: ${nats.url}`);
    Object.assign(env, { NATS_URL: nats.url, USAGE_STREAM_REPLICAS: '3' });
  }
  if (withRedis) {
    const redis = await startRedisCluster({ masters: 3, replicas: 1 });
    stops.push(() => redis.stop());
    console.log(`Redis Cluster, three masters with a replica each: ${redis.url}`);
    Object.assign(env, { REDIS_URL: redis.url, REDIS_WAIT_REPLICAS: '1' });
  }
  const result = spawnSync(command, args, { stdio: 'inherit', env });
  status = result.status ?? 1;
} finally {
  for (const stop of stops.reverse()) await stop();
}
process.exit(status);
