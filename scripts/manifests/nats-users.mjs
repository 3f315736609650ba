// The NATS users of an overlay that runs NATS in the cluster with an authorization block
// (components/nats, components/nats-cluster): every password the block reads ($NATS_<USER>_PASSWORD)
// is in the NATS container's environment from the Secret gateway-nats-users, key <user>; and each
// NATS client of the gateway connects as its own user, in every URL of its NATS_URL, with its
// NATS_PASSWORD from that Secret's key of the same name. A client left on gateway-config's
// user-less URL would be refused by the server at every connection. Where the server speaks TLS (a
// top-level `tls` block: components/nats-cluster), every client URL is tls:// and the client trusts
// the server's CA: NODE_EXTRA_CA_CERTS names ca.crt of the server's TLS Secret, mounted in the pod.

const CLIENTS = ['edge', 'router', 'executor', 'metering', 'request-log'];
const nameOf = (object) => object?.metadata?.name;
const baseName = (name) => String(name ?? '').replace(/-[a-z0-9]{10}$/, '');

/** The users of a nats.conf's authorization block, each with the variable its password reads. */
function usersOf(conf) {
  const block = /^authorization \{[\s\S]*?^\}$/m.exec(conf)?.[0];
  if (!block) return undefined;
  return [...block.matchAll(/user:\s*([A-Za-z0-9_-]+)\s+password:\s*\$([A-Z0-9_]+)/g)].map((match) => ({ user: match[1], variable: match[2] }));
}

/**
 * The NATS user problems of a rendered overlay; none when it runs no NATS with users.
 * @param {string} label the overlay, for the messages
 * @param {object[]} objects the rendered objects
 * @returns {string[]}
 */
export function natsUserProblems(label, objects) {
  const problems = [];
  const workloads = objects.filter((object) => ['Deployment', 'StatefulSet'].includes(object?.kind));
  for (const nats of workloads.filter((workload) =>
    (workload.spec?.template?.spec?.containers ?? []).some((container) => /(^|\/)nats(:|@|$)/.test(String(container.image))),
  )) {
    const spec = nats.spec.template.spec;
    const mapName = (spec.volumes ?? []).map((volume) => volume.configMap?.name).find(Boolean);
    const conf = Object.values(objects.find((object) => object?.kind === 'ConfigMap' && nameOf(object) === mapName)?.data ?? {}).join('\n');
    const users = usersOf(conf);
    if (!users) continue;
    const container = spec.containers.find((candidate) => /(^|\/)nats(:|@|$)/.test(String(candidate.image)));
    const at = `${label}: ${nats.kind} ${nameOf(nats)}`;
    for (const { user, variable } of users) {
      const reference = (container.env ?? []).find((entry) => entry.name === variable)?.valueFrom?.secretKeyRef;
      if (baseName(reference?.name) !== 'gateway-nats-users' || reference?.key !== user)
        problems.push(
          `${at}: nats.conf reads ${variable} for the user ${user}, which its container does not take from the key ${user} of the Secret gateway-nats-users`,
        );
    }
    const names = new Set(users.map(({ user }) => user));
    const tls = /^tls \{/m.test(conf);
    const tlsSecret = (spec.volumes ?? []).find(
      (volume) => volume.secret && (container.volumeMounts ?? []).some((mount) => mount.name === volume.name && /tls/.test(mount.mountPath)),
    )?.secret?.secretName;
    for (const client of workloads.filter((workload) => workload.kind === 'Deployment' && CLIENTS.includes(nameOf(workload)))) {
      const env = client.spec?.template?.spec?.containers?.[0]?.env ?? [];
      const url = env.find((entry) => entry.name === 'NATS_URL')?.value ?? '';
      const password = env.find((entry) => entry.name === 'NATS_PASSWORD')?.valueFrom?.secretKeyRef;
      const service = nameOf(client);
      const urlUsers = [...url.matchAll(/:\/\/([^:@/]+):\$\(NATS_PASSWORD\)@/g)].map((match) => match[1]);
      const entries = url.split(',').filter((entry) => entry.trim()).length;
      if (entries === 0 || urlUsers.length !== entries || urlUsers.some((user) => user !== service))
        problems.push(
          `${label}: Deployment ${service} does not connect to NATS as its user ${service} (NATS_URL ${url || 'from gateway-config, without a user'})`,
        );
      else if (!names.has(service)) problems.push(`${label}: Deployment ${service} connects as ${service}, a user nats.conf does not have`);
      if (tls && !url.split(',').every((entry) => entry.trim().startsWith('tls://')))
        problems.push(`${label}: Deployment ${service} connects to NATS without TLS (${url}), which the server requires`);
      if (tls && !trustsCa(client, tlsSecret))
        problems.push(`${label}: Deployment ${service} does not trust the NATS servers' CA (NODE_EXTRA_CA_CERTS on ca.crt of the Secret ${tlsSecret})`);
      if (baseName(password?.name) !== 'gateway-nats-users' || password?.key !== service)
        problems.push(`${label}: Deployment ${service} does not take NATS_PASSWORD from the key ${service} of the Secret gateway-nats-users`);
    }
  }
  return problems;
}

/** Whether a client's NODE_EXTRA_CA_CERTS is the file ca.crt of the Secret `secretName`, mounted in its container. */
function trustsCa(client, secretName) {
  const spec = client.spec?.template?.spec ?? {};
  const container = spec.containers?.[0] ?? {};
  const path = (container.env ?? []).find((entry) => entry.name === 'NODE_EXTRA_CA_CERTS')?.value;
  if (!path || !secretName) return false;
  return (container.volumeMounts ?? []).some((mount) => {
    const volume = (spec.volumes ?? []).find((candidate) => candidate.name === mount.name);
    if (volume?.secret?.secretName !== secretName) return false;
    const files = volume.secret.items ? volume.secret.items.filter((item) => item.key === 'ca.crt').map((item) => item.path) : ['ca.crt'];
    return files.some((file) => path === `${mount.mountPath.replace(/\/$/, '')}/${file}`);
  });
}
